"""Each user's quotas on sweeps: the points of their unfinished sweeps (429 while it frees itself)
and the bytes their sweeps' results store (409 until they delete some); others are not affected."""
from rest_framework.test import APIClient

LONG_AXES = {"cluster.node_count": {"start": 40, "stop": 1239, "step": 1}}  # 1,200 points


def sweep(client, axes):
    return client.post("/api/sweeps/", {"plan": "ff2-pcie-2zone", "workload": "llama-13b-512", "axes": axes},
                       format="json")


def test_unfinished_points_are_capped_per_user(catalog, reader_client, django_user_model, settings, monkeypatch):
    monkeypatch.setattr("planner.services.submission.sweep_enqueue", lambda sweep: None)  # they stay pending
    settings.SWEEP_USER_MAX_QUEUED_POINTS = 2_000
    first = sweep(reader_client, LONG_AXES)
    assert first.status_code == 201 and first.json()["status"] == "pending"
    refused = sweep(reader_client, {**LONG_AXES, "workload.gpus": [128]})
    assert refused.status_code == 429
    assert refused.json()["errors"] == {"SWEEP_USER_MAX_QUEUED_POINTS": [
        "your unfinished sweeps hold 1,200 points and this one 1,200; at most 2,000 at once: submit it when some "
        "have finished, or cancel one"]}
    neighbour = APIClient()
    neighbour.force_authenticate(django_user_model.objects.create_user("neighbour", password="pw-neighbour-1234"))
    assert sweep(neighbour, LONG_AXES).status_code == 201  # a quota is each user's own
    assert reader_client.post(f"/api/sweeps/{first.json()['id']}/cancel/").status_code == 200
    assert sweep(reader_client, {**LONG_AXES, "workload.gpus": [128]}).status_code == 201


def test_stored_results_are_capped_per_user(catalog, reader_client, settings, eager_celery):
    settings.SWEEP_USER_MAX_STORED_BYTES = 1_000
    done = sweep(reader_client, {"workload.gpus": [64, 128]})
    assert done.status_code == 201 and done.json()["status"] == "done"
    refused = sweep(reader_client, {"workload.gpus": [256]})
    assert refused.status_code == 409
    reason = refused.json()["errors"]["SWEEP_USER_MAX_STORED_BYTES"][0]
    assert reason.startswith("your sweeps store ") and reason.endswith(
        "bytes of results; at most 1,000: delete sweeps you no longer need")
    assert reader_client.delete(f"/api/sweeps/{done.json()['id']}/").status_code == 204
    assert sweep(reader_client, {"workload.gpus": [256]}).status_code == 201
