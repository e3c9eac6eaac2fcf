"""Others' work on a shared plan or workload: when its owner deletes it or makes it private, each
other user's twins and sweeps that name it get that user's own copy, and the owner is not blocked."""
from rest_framework.test import APIClient

from planner.models import ClusterPlan, Sweep, Workload
from twin.models import Twin


def client_of(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def test_others_twins_and_sweeps_keep_their_own_copy_when_the_owner_stops_sharing(catalog, django_user_model,
                                                                                  eager_celery, monkeypatch):
    monkeypatch.setattr("twin.api.views.ensure_local_driver", lambda: False)
    alice, bob = (django_user_model.objects.create_user(name, password=f"pw-{name}-1234") for name in ("alice", "bob"))
    owner, other = client_of(alice), client_of(bob)
    assert owner.post("/api/plans/ff2-pcie-2zone/clone/", {"slug": "alice-ff"}, format="json").status_code == 201
    assert owner.patch("/api/plans/alice-ff/", {"visibility": "shared"}, format="json").status_code == 200
    workload = {**owner.get("/api/workloads/llama-13b-512/").json(), "slug": "alice-llama", "visibility": "shared"}
    assert owner.post("/api/workloads/", workload, format="json").status_code == 201, "workload"
    twin = other.post("/api/twins/", {"plan": "alice-ff", "seed": 3}, format="json").json()
    sweep = other.post("/api/sweeps/", {"plan": "alice-ff", "workload": "alice-llama",
                                        "axes": {"workload.gpus": [64, 128]}}, format="json").json()
    own_twin = owner.post("/api/twins/", {"plan": "alice-ff", "seed": 1}, format="json").json()
    run = other.post("/api/runs/", {"plan": "alice-ff", "workload": "alice-llama", "measured_s": 10.0,
                                    "source": "bob's cluster"}, format="json")
    assert run.status_code == 201, run.json()

    held = owner.delete("/api/plans/alice-ff/")  # the owner's own twin still keeps it, and nothing changed
    assert held.status_code == 409 and not ClusterPlan.objects.filter(owner=bob).exists()
    assert Twin.objects.get(pk=twin["id"]).plan.slug == "alice-ff"
    assert owner.delete(f"/api/twins/{own_twin['id']}/").status_code == 204
    gone = owner.delete("/api/plans/alice-ff/")
    assert gone.status_code == 204, gone.json()["referenced_by"]  # bob's twin and sweep no longer pin it

    copy = ClusterPlan.objects.get(owner=bob)
    assert (copy.slug, copy.visibility, copy.node_count) == (f"alice-ff-kept-{bob.pk}", "private",
                                                             ClusterPlan.objects.get(slug="ff2-pcie-2zone").node_count)
    assert other.get(f"/api/twins/{twin['id']}/").json()["plan"] == copy.slug
    assert other.get(f"/api/sweeps/{sweep['id']}/").json()["plan"] == copy.slug
    assert other.get(f"/api/runs/{run.json()['id']}/").json()["plan"] == copy.slug  # his run names his copy
    evaluated = other.post(f"/api/plans/{copy.slug}/evaluate/", {"workload": "alice-llama"}, format="json")
    assert evaluated.status_code == 200

    assert owner.patch("/api/workloads/alice-llama/", {"visibility": "private"}, format="json").status_code == 200
    assert other.get("/api/workloads/alice-llama/").status_code == 404
    assert other.get(f"/api/sweeps/{sweep['id']}/").json()["workload"] == f"alice-llama-kept-{bob.pk}"
    assert Workload.objects.get(slug=f"alice-llama-kept-{bob.pk}").owner == bob
    assert Sweep.objects.get(pk=sweep["id"]).status == "done"
    assert owner.delete("/api/workloads/alice-llama/").status_code == 204  # nothing of bob's names it now
