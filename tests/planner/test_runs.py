"""Your runs: a training run measured on your own cluster is a case of the validation record that is
yours alone; it joins the error bands of your plans of its family and kind, and no one else's."""
import pytest
from django.contrib.auth import get_user_model
from rest_framework.test import APIClient

from planner.models import ClusterPlan
from simcore.tools.trace import COMPUTE
from tests.planner.test_trace_measurements import trace_file

WORKLOAD = "llama-13b-512"  # LLaMa-13B on 512 GPUs: 64 DGX-A100 nodes


@pytest.fixture
def my_plan(my_plan):
    my_plan.node_count = 64
    my_plan.save()
    return my_plan


@pytest.fixture
def other_client(db):
    """A second user with a private copy of the same preset."""
    other = get_user_model().objects.create_user("other", password="pw-other-1234")
    plan = ClusterPlan.objects.get(slug="dgx-a100-3layer")
    plan.pk, plan.slug, plan.owner, plan.visibility, plan.node_count = None, "their-dgx", other, "private", 64
    plan.save()
    client = APIClient()
    client.force_authenticate(other)
    return client


def step_band(client, slug):
    response = client.post(f"/api/plans/{slug}/evaluate/", {"workload": WORKLOAD}, format="json")
    assert response.status_code == 200, response.json()
    body = response.json()
    return body["result"]["training"]["step_time_s"], body["bands"]["training.step_time_s"]


def test_a_run_of_yours_widens_the_bands_of_your_plans_and_no_one_elses(reader_client, other_client, my_plan):
    step_s, before = step_band(reader_client, my_plan.slug)
    assert before["own_cases"] == 0 and before["group"] == "step_time:ampere:dense:3d"
    # Measured twice as slow as the engine says: an error of -50%, below every published Ampere run's.
    assert before["low_error"] > -0.5
    response = reader_client.post("/api/runs/", {"plan": my_plan.slug, "workload": WORKLOAD, "measured_s": 2 * step_s,
                                                 "source": "our cluster, job 4711, steps 100-200", "name": "job 4711"},
                                  format="json")
    assert response.status_code == 201, response.json()
    run = response.json()
    assert run["key"] == f"own-{run['id']}" and run["quantity"] == "step_time_s"
    assert run["predicted_s"] == pytest.approx(step_s) and run["error"] == pytest.approx(-0.5)
    assert not run["passes"] and run["group"] == "step_time:ampere:dense"
    assert run["case"]["trains"] == {"family": "ampere", "kind": "dense", "parallel": "3d"}
    _, after = step_band(reader_client, my_plan.slug)
    assert after["cases"] == before["cases"] + 1 and after["own_cases"] == 1 and run["key"] in after["keys"]
    assert after["low_error"] == pytest.approx(-0.5) and after["high_error"] == before["high_error"]
    assert after["actual_high"] == pytest.approx(2 * step_s)
    published = after["cases"] - 1
    assert f"on {published} published dense transformer training runs on ampere GPUs with" in after["message"]
    assert "and 1 of your own run the prediction was" in after["message"]
    # Issue 70, item 12: the trust note counts your run beside the published ones.
    trust = reader_client.post(f"/api/plans/{my_plan.slug}/evaluate/", {"workload": WORKLOAD},
                               format="json").json()["trust"]
    assert (trust["own_cases"], trust["own_passing"], trust["trusted"]) == (1, 0, False)
    assert trust["message"].endswith("Of your own 1 run like it, 0 are within tolerance (largest error 50%); "
                                     "the bands below take it.")
    # Not on anyone else's plan: another user's copy, nor the shared preset the reader evaluates.
    _, theirs = step_band(other_client, "their-dgx")
    _, preset = step_band(reader_client, "dgx-a100-3layer")
    for band in (theirs, preset):
        assert band["cases"] == before["cases"] and band["own_cases"] == 0 and band["low_error"] == before["low_error"]
    # Private: the other user neither lists nor reads it, nor changes it.
    assert other_client.get("/api/runs/").json()["count"] == 0
    assert other_client.get(f"/api/runs/{run['id']}/").status_code == 404
    assert other_client.patch(f"/api/runs/{run['id']}/", {"name": "x"}, format="json").status_code == 404
    renamed = reader_client.patch(f"/api/runs/{run['id']}/", {"name": "job 4711, rerun"}, format="json").json()
    assert renamed["case"]["quantity"] == "job 4711, rerun" and renamed["measured_s"] == pytest.approx(2 * step_s)
    assert reader_client.delete(f"/api/runs/{run['id']}/").status_code == 204
    assert step_band(reader_client, my_plan.slug)[1] == before


def test_a_run_from_your_trace_is_its_layers_compute_time_beside_the_engines(reader_client, my_plan):
    upload = reader_client.post("/api/measurements/", {"kind": "trace", "file": trace_file(), "plan": my_plan.slug,
                                                       "workload": WORKLOAD, "dense_layers": 1}, format="multipart")
    assert upload.status_code == 201, upload.json()
    trace = upload.json()
    compute = [row for row in trace["comparison"]["rows"] if row["part"] in COMPUTE]
    assert len(compute) == 4 and all(row["predicted_us"] is not None for row in compute)
    response = reader_client.post("/api/runs/", {"trace": trace["id"]}, format="json")
    assert response.status_code == 201, response.json()
    run = response.json()
    assert run["quantity"] == "traced_compute_s" and run["trace"] == trace["id"] and run["plan"] == my_plan.slug
    assert run["measured_s"] == pytest.approx(sum(row["traced_us"] for row in compute) / 1e6)
    assert run["predicted_s"] == pytest.approx(sum(row["predicted_us"] for row in compute) / 1e6)
    assert run["source"].startswith("profiler trace step.json.gz (sha256 ")
    assert run["case"]["predict"]["measure"] == "traced_compute" and run["case"]["predict"]["dense_layers"] == 1
    _, band = step_band(reader_client, my_plan.slug)
    assert band["own_cases"] == 1 and run["key"] in band["keys"]


def test_a_run_from_a_megatron_log_is_its_median_step_with_its_timers_beside_the_engines(reader_client, my_plan):
    from tests.simcore.test_megatron import megatron_log

    response = reader_client.post("/api/runs/", {"plan": my_plan.slug, "workload": WORKLOAD,
                                                 "megatron_log": megatron_log()}, format="json")
    assert response.status_code == 201, response.json()
    run = response.json()
    assert run["measured_s"] == pytest.approx(14.7551) and run["quantity"] == "step_time_s"
    assert run["source"].startswith("Megatron-LM log: the median of 3 logged intervals' elapsed time per iteration "
                                    "(iterations 10 to 40")
    assert run["details"]["megatron"]["elapsed_ms"] == [15210.3, 14712.8, 14790.0, 14755.1]
    timers = {t["timer"]: t for t in run["megatron_timers"]}
    assert set(timers) == {"forward-backward", "forward-compute", "optimizer"}
    assert timers["forward-backward"]["measured_ms"] == 14350.7 and timers["optimizer"]["measured_ms"] == 352.33
    # Beside the engine's parts for the same scenario: its forward and backward (with the bubble, stragglers and
    # exposed communication) within the step it predicts, and its forward alone under that.
    step_ms = run["predicted_s"] * 1e3
    assert 0 < timers["forward-compute"]["engine_ms"] < timers["forward-backward"]["engine_ms"] < step_ms
    both = reader_client.post("/api/runs/", {"plan": my_plan.slug, "workload": WORKLOAD, "measured_s": 10,
                                             "megatron_log": megatron_log()}, format="json")
    assert both.status_code == 400 and "measured_s" in both.json()["errors"]
    no_log = reader_client.post("/api/runs/", {"plan": my_plan.slug, "workload": WORKLOAD,
                                               "megatron_log": "training ...\n"}, format="json")
    assert no_log.status_code == 400 and "megatron_log" in no_log.json()["errors"]


@pytest.mark.parametrize(("body", "field"), [
    ({"workload": WORKLOAD, "measured_s": 10, "source": "s"}, "plan"),
    ({"plan": "my-dgx", "workload": WORKLOAD, "measured_s": -1, "source": "s"}, "measured_s"),
    ({"plan": "my-dgx", "workload": WORKLOAD, "measured_s": 1e30, "source": "s"}, "measured_s"),
    ({"plan": "my-dgx", "workload": WORKLOAD, "measured_s": 2**64, "source": "s"}, "measured_s"),
    ({"plan": "my-dgx", "workload": WORKLOAD, "source": "s",
      "megatron_log": "iteration 1/10 | elapsed time per iteration (ms): 1.2.3\niteration 2/10 | elapsed time per "
                      "iteration (ms): ...\n"}, "megatron_log"),
    ({"plan": "my-dgx", "workload": WORKLOAD, "source": "s", "megatron_log": "iteration 1/1 |" * 8000}, "megatron_log"),
    ({"plan": "my-dgx", "workload": WORKLOAD, "measured_s": 10}, "source"),
    ({"plan": "my-dgx", "workload": "no-such-workload", "measured_s": 10, "source": "s"}, "workload"),
    ({"trace": 10**6}, "trace"),
    ({"trace": 1, "plan": "my-dgx"}, "plan"),
])
def test_a_run_that_cannot_be_a_case_is_refused_naming_the_field(reader_client, my_plan, body, field):
    response = reader_client.post("/api/runs/", body, format="json")
    assert response.status_code == 400 and field in response.json()["errors"], response.json()


def test_a_user_past_the_runs_bound_is_told_to_delete_some(reader_client, my_plan, monkeypatch):
    monkeypatch.setattr("planner.services.runs.MAX_RUNS_PER_USER", 1)
    body = {"plan": my_plan.slug, "workload": WORKLOAD, "measured_s": 10, "source": "our cluster"}
    assert reader_client.post("/api/runs/", body, format="json").status_code == 201
    refused = reader_client.post("/api/runs/", body, format="json")
    assert refused.status_code == 409 and "delete some first" in refused.json()["errors"]["runs"][0]


def test_a_runs_prediction_is_stored_with_it_and_lists_do_not_evaluate(reader_client, my_plan, monkeypatch):
    """Issue 69 item 7: the run's prediction is computed when it is made and stored with its engine
    version; lists and pages read it, and compute it again only once the engine has changed."""
    import simcore
    from planner.models import MeasuredRun
    from simcore.tools import references
    from tests.simcore.test_megatron import megatron_log

    body = {"plan": my_plan.slug, "workload": WORKLOAD, "source": "our cluster", "megatron_log": megatron_log()}
    made = reader_client.post("/api/runs/", body, format="json").json()
    run = MeasuredRun.objects.get(pk=made["id"])
    assert run.prediction["engine_version"] == simcore.ENGINE_VERSION
    assert run.prediction["predicted"] == pytest.approx(made["predicted_s"])
    assert set(run.prediction["step_parts_s"]) >= {"forward", "backward", "optimizer"}
    predictions = []
    predict = references.ReferenceCase.predict
    monkeypatch.setattr(references.ReferenceCase, "predict",
                        lambda case, params: predictions.append(case.key) or predict(case, params))
    listed = reader_client.get("/api/runs/").json()["results"]
    assert [r["predicted_s"] for r in listed] == [made["predicted_s"]] and predictions == []
    by_timer = lambda timers: sorted(timers, key=lambda t: t["timer"])  # noqa: E731 (PostgreSQL orders JSON keys)
    assert by_timer(reader_client.get(f"/api/runs/{run.pk}/").json()["megatron_timers"]) == by_timer(
        made["megatron_timers"])
    assert predictions == []
    MeasuredRun.objects.filter(pk=run.pk).update(prediction={**run.prediction, "engine_version": "0.0.0"})
    again = reader_client.get("/api/runs/").json()["results"]
    assert again[0]["predicted_s"] == pytest.approx(made["predicted_s"]) and len(predictions) == 1
    assert MeasuredRun.objects.get(pk=run.pk).prediction["engine_version"] == simcore.ENGINE_VERSION
