"""Sweeps through the API and the command line, with tasks run in process (the embedded default)."""
import csv
import io
import json

import numpy as np
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from planner.models import ClusterPlan, PriceItem, Sweep, SweepChunk
from planner.services.sweeps import sweep_run_chunk, sweep_settle
from simcore import evaluate

from .test_plans_api import FF

LLAMA = "llama-13b-512"
AXES = {"cluster.node_count": {"start": 200, "stop": 1240, "step": 40}, "workload.gpus": [64, 128, 256, 512, 300]}


@pytest.fixture
def small_chunks(settings):
    settings.SWEEP_CHUNK_POINTS = 25


@pytest.fixture
def priced_ff(catalog):
    """The FF plan without its 3FS nodes, as FF Table III prices its builds (servers and network):
    cost goals compare those totals alone."""
    ClusterPlan.objects.filter(slug=FF).update(storage_node_count=0)


def create(client, **body):
    return client.post("/api/sweeps/", {"plan": FF, "workload": LLAMA, "axes": AXES, **body}, format="json")


def test_a_sweep_runs_and_matches_direct_evaluation_point_for_point(catalog, reader_client, eager_celery,
                                                                    small_chunks):
    response = create(reader_client)
    assert response.status_code == 201, response.json()
    sweep = response.json()
    assert sweep["status"] == "done" and sweep["progress"] == 1.0
    assert sweep["total_points"] == 27 * 5 and sweep["chunk_count"] == 6
    rows = reader_client.get(f"/api/sweeps/{sweep['id']}/results/", {"page_size": 500}).json()
    assert rows["count"] == rows["stored_points"] == 135
    base = reader_client.post(f"/api/plans/{FF}/evaluate/", {"workload": LLAMA}, format="json").json()["result"]
    for row in rows["results"][::7]:
        from planner.adapters import scenario_document
        from planner.models import ClusterPlan, Workload

        document = scenario_document(ClusterPlan.objects.get(slug=FF), Workload.objects.get(slug=LLAMA))
        document["cluster"]["node_count"] = row["axes"]["cluster.node_count"]
        document["workload"]["gpus"] = row["axes"]["workload.gpus"]
        direct = evaluate(document)
        assert row["outputs"]["fabric.switches"] == direct["fabric"]["switches"]
        assert row["outputs"]["training.step_time_s"] == direct["training"]["step_time_s"]
        assert row["valid"] == (direct["training"]["feasible"] and direct["fabric"]["fits"])
    assert base["training"]["step_time_s"] > 0


def test_invalid_points_are_recorded_with_their_reason(catalog, reader_client, eager_celery):
    sweep = create(reader_client).json()
    invalid = reader_client.get(f"/api/sweeps/{sweep['id']}/results/", {"valid": "false"}).json()
    reasons = {row["invalid_reason"] for row in invalid["results"]}
    assert "TP x PP x CP does not divide the job's GPUs" in reasons  # 300 GPUs / (2 x 4)
    assert any(row["axes"]["workload.gpus"] == 300 for row in invalid["results"])
    too_big = [row for row in invalid["results"]
               if row["axes"]["cluster.node_count"] * 8 < row["axes"]["workload.gpus"]]
    assert all(row["invalid_reason"] == "the job needs more GPUs than the cluster has" for row in too_big)


def test_a_cost_goal_on_a_bill_with_an_unpriced_part_finds_no_optimum_and_says_why(catalog, reader_client,
                                                                                   eager_celery):
    PriceItem.objects.filter(price_book__slug="fire-flyer-relative", part_kind="storage-node").delete()
    result = create(reader_client, goal={"minimize": "cost.capex_total"}).json()["goal_result"]
    assert result["optimum"] is None and result["binding"]["constraint"] == "cost.unpriced_count <= 0"


def test_goal_seeking_through_the_api(catalog, priced_ff, reader_client, eager_celery):
    goal = {"minimize": "cost.capex_total", "constraints": [{"metric": "training.step_time_s", "max": 20}],
            "pareto": [["cost.capex_total", "training.step_time_s"]]}
    sweep = create(reader_client, goal=goal).json()
    outcome = sweep["goal_result"]
    feasible = reader_client.get(f"/api/sweeps/{sweep['id']}/results/",
                                 {"feasible": "true", "order_by": "cost.capex_total", "page_size": 500}).json()
    assert feasible["count"] == outcome["feasible"] > 0
    best = feasible["results"][0]
    assert best["point"] == outcome["optimum"]
    assert best["outputs"]["training.step_time_s"] <= 20
    assert all(r["outputs"]["cost.capex_total"] >= best["outputs"]["cost.capex_total"] for r in feasible["results"])
    impossible = create(reader_client, goal={**goal, "constraints": [{"metric": "training.step_time_s", "max": 0.5}]})
    result = impossible.json()["goal_result"]
    assert result["optimum"] is None
    assert result["binding"]["constraint"] == "training.step_time_s <= 0.5"
    # The chart's sample names, for each valid point, the constraints it fails.
    sample = reader_client.get(f"/api/sweeps/{sweep['id']}/sample/").json()["results"]
    slow = [r for r in sample if r["valid"] and r["outputs"]["training.step_time_s"] > 20]
    fast = [r for r in sample if r["valid"] and r["outputs"]["training.step_time_s"] <= 20]
    assert slow and fast
    assert all(r["rejected_by"] == ["training.step_time_s <= 20"] for r in slow)
    assert all(r["rejected_by"] == [] for r in fast + [r for r in sample if not r["valid"]])


def test_identical_sweeps_reuse_results(catalog, reader_client, eager_celery):
    first = create(reader_client).json()
    second = create(reader_client).json()
    assert second["reused_from"] == first["id"] and second["status"] == "done"
    assert SweepChunk.objects.filter(sweep_id=second["id"]).count() == 0
    rows = reader_client.get(f"/api/sweeps/{second['id']}/results/").json()
    assert rows["stored_points"] == first["total_points"]


def test_cancel_stops_pending_chunks(catalog, reader_client, small_chunks, monkeypatch):
    monkeypatch.setattr("planner.services.submission.sweep_enqueue", lambda sweep: None)  # nothing runs yet
    sweep = Sweep.objects.get(pk=create(reader_client).json()["id"])
    assert sweep.status == "pending"
    assert sweep_run_chunk(sweep_id=sweep.pk, index=0)
    assert Sweep.objects.get(pk=sweep.pk).status == "running"
    cancelled = reader_client.post(f"/api/sweeps/{sweep.pk}/cancel/").json()
    assert cancelled["status"] == "cancelled"
    assert not sweep_run_chunk(sweep_id=sweep.pk, index=1)
    assert SweepChunk.objects.filter(sweep=sweep).count() == 1
    assert reader_client.get(f"/api/sweeps/{sweep.pk}/results/").json()["stored_points"] == 25


def test_a_chunk_is_stored_once(catalog, reader_client, eager_celery):
    sweep = Sweep.objects.get(pk=create(reader_client).json()["id"])
    sweep.status = "running"
    sweep.save()
    assert not sweep_run_chunk(sweep_id=sweep.pk, index=0)  # already stored
    assert SweepChunk.objects.filter(sweep=sweep, index=0).count() == 1


@pytest.mark.parametrize("body,field,words", [
    ({"axes": {"cluster.colour": [1, 2]}}, "axes.cluster.colour", "unknown field"),
    ({"axes": {}}, "axes", "at least one axis"),
    ({"axes": {"cluster.node_count": []}}, "axes.cluster.node_count", "non-empty"),
    ({"axes": {"cluster.node_count": {"start": 1, "stop": 5, "steps": 0}}}, "axes.cluster.node_count.steps",
     "at least 1"),
    ({"axes": {"cluster.node_count": [-1, 4]}}, "axes.cluster.node_count", "greater than zero"),
    ({"axes": {"workload.tp": [3, 5]}}, "axes", "every point of the grid is invalid"),
    ({"axes": {"cluster.node_count": ["many"]}}, "axes.cluster.node_count", "takes numbers"),
    ({"axes": {"plan.switch": ["qm8700", "no-such"]}}, "axes.plan.switch", "no switch 'no-such'"),
    ({"axes": AXES, "goal": {"minimize": "cost.colour"}}, "cost.colour", "is not a result metric"),
    ({"axes": AXES, "outputs": ["fabric.nothing"]}, "fabric.nothing", "is not a result metric"),
    ({"axes": AXES, "goal": {"minimize": "training.step_time_s", "constraints": [{"metric": "x"}]}},
     "goal.constraints.0", "min or a max"),
    ({"plan": "no-such-plan"}, "plan", "no plan 'no-such-plan'"),
])
def test_bad_sweeps_answer_400_with_reasons(body, field, words, catalog, reader_client):
    before = Sweep.objects.count()
    response = reader_client.post("/api/sweeps/", {"plan": FF, "workload": LLAMA, "axes": AXES, **body},
                                  format="json")
    assert response.status_code == 400
    assert words in str(response.json().get(field)), response.json()
    assert Sweep.objects.count() == before


def test_gigantic_grids_are_refused(catalog, reader_client, settings):
    settings.SWEEP_MAX_POINTS = 1000
    response = create(reader_client, axes={"cluster.node_count": {"start": 100, "stop": 1200, "steps": 100},
                                           "workload.gpus": {"start": 64, "stop": 512, "steps": 11}})
    assert response.status_code == 400
    assert "1,100 points; the limit is 1,000" in response.json()["axes"][0]


def test_categorical_axes_swap_catalogue_parts(catalog, reader_client, eager_celery):
    sweep = create(reader_client, axes={"plan.switch": ["qm8700", "qm9700", "tomahawk5-128x400g"],
                                        "cluster.node_count": [600, 1240]}).json()
    rows = reader_client.get(f"/api/sweeps/{sweep['id']}/results/").json()["results"]
    by_switch = {(r["axes"]["plan.switch"], r["axes"]["cluster.node_count"]): r for r in rows}
    assert by_switch[("qm8700", 1240)]["outputs"]["fabric.switches"] == 122
    # FF's HDR optics do not fit an NDR switch's ports: the point names the part instead of a cheaper bill.
    assert "transceiver: runs at 200 Gb/s" in by_switch[("qm9700", 1240)]["invalid_reason"]
    assert "RoCE" in by_switch[("tomahawk5-128x400g", 600)]["invalid_reason"]


def _download(client, sweep, kind) -> bytes:
    response = client.get(f"/api/sweeps/{sweep['id']}/export/", {"file": kind})
    assert response.status_code == 200 and f'sweep-{sweep["id"]}.{kind}' in response["Content-Disposition"]
    return b"".join(response.streaming_content)


def test_export_csv_parquet_and_npz(catalog, reader_client, eager_celery, small_chunks):
    import pyarrow.parquet as pq

    sweep = create(reader_client).json()
    csv_text = _download(reader_client, sweep, "csv").decode()
    lines = csv_text.strip().splitlines()
    assert lines[0].startswith('"point","cluster.node_count","workload.gpus",') and len(lines) == 136
    rows = list(csv.DictReader(io.StringIO(csv_text)))
    table = pq.read_table(io.BytesIO(_download(reader_client, sweep, "parquet")))
    assert table.column("point").to_pylist() == list(range(135)) == [int(r["point"]) for r in rows]
    switches = reader_client.get(f"/api/sweeps/{sweep['id']}/results/", {"page_size": 500}).json()["results"]
    assert table.column("fabric.switches").to_pylist() == [r["outputs"]["fabric.switches"] for r in switches]
    step = table.column("training.step_time_s").to_pylist()
    assert [s is None for s in step] == [r["outputs"]["training.step_time_s"] is None for r in switches]
    assert [r["training.step_time_s"] == "" for r in rows] == [s is None for s in step]  # missing, not NaN
    import pyarrow as pa

    assert table.schema.field("valid").type == pa.bool_() and table.schema.field("fabric.fits").type == pa.bool_()
    assert table.schema.field("training.feasible").type == pa.bool_()
    assert table.schema.field("fabric.switches").type == pa.int64()
    assert table.column("valid").to_pylist() == [r["valid"] for r in switches]
    npz = np.load(io.BytesIO(_download(reader_client, sweep, "npz")))
    assert npz["point"].tolist() == list(range(135))
    assert npz["fabric.switches"].shape == (135,)
    assert reader_client.get(f"/api/sweeps/{sweep['id']}/export/", {"file": "xls"}).status_code == 400


def test_results_pagination_and_ordering(catalog, reader_client, eager_celery):
    sweep = create(reader_client).json()
    page = reader_client.get(f"/api/sweeps/{sweep['id']}/results/",
                             {"valid": "true", "order_by": "-training.mfu", "page": 2, "page_size": 10}).json()
    assert len(page["results"]) == 10 and "page=3" in page["next"] and "page=" not in page["previous"]
    assert "page_size=10" in page["previous"] and "order_by=-training.mfu" in page["next"]
    mfus = [r["outputs"]["training.mfu"] for r in page["results"]]
    assert mfus == sorted(mfus, reverse=True)
    assert reader_client.get(f"/api/sweeps/{sweep['id']}/results/", {"page_size": 501}).status_code == 400
    assert reader_client.get(f"/api/sweeps/{sweep['id']}/results/", {"order_by": "colour"}).status_code == 400


def test_other_users_cannot_see_a_sweep(catalog, reader_client, eager_celery, db):
    from django.contrib.auth import get_user_model
    from rest_framework.test import APIClient

    sweep = create(reader_client).json()
    other = APIClient()
    other.force_authenticate(get_user_model().objects.create_user("other2", password="pw-other-1234"))
    assert other.get(f"/api/sweeps/{sweep['id']}/").status_code == 404
    assert other.get(f"/api/sweeps/{sweep['id']}/results/").status_code == 404
    assert other.post(f"/api/sweeps/{sweep['id']}/cancel/").status_code == 404
    assert other.get("/api/sweeps/").json()["count"] == 0


def test_run_sweep_command(catalog, user, eager_celery, tmp_path, capsys):
    path = tmp_path / "sweep.json"
    path.write_text(json.dumps({"plan": FF, "workload": LLAMA, "axes": AXES,
                                "goal": {"minimize": "cost.capex_total"}}))
    call_command("run_sweep", str(path), "--user", "reader", "--wait")
    out = capsys.readouterr().out
    assert "135 points" in out and "done 100.0%" in out and '"optimum"' in out
    path.write_text(json.dumps({"plan": FF, "axes": {"cluster.colour": [1]}}))
    with pytest.raises(CommandError, match="axes.cluster.colour: unknown field"):
        call_command("run_sweep", str(path), "--user", "reader")


def test_default_outputs_fit_workloads_without_a_token_count(catalog, reader_client, eager_celery):
    response = reader_client.post("/api/sweeps/", {"plan": FF, "workload": "vgg16-512",
                                                   "axes": {"workload.gpus": [64, 128]}}, format="json")
    assert response.status_code == 201, response.json()
    assert "training.time_to_train_days" not in response.json()["spec"]["outputs"]


def test_a_part_combination_the_engine_refuses_is_recorded_per_point(catalog, reader_client, eager_celery):
    tf32 = {"plan.node_type": ["ff-pcie-a100", "ascend-910b-8card"], "cluster.node_count": [600, 1240]}
    response = reader_client.post("/api/sweeps/", {"plan": FF, "workload": "vgg16-512", "axes": tf32},
                                  format="json")
    assert response.status_code == 201, response.json()
    rows = reader_client.get(f"/api/sweeps/{response.json()['id']}/results/").json()["results"]
    ascend = [r for r in rows if r["axes"]["plan.node_type"] == "ascend-910b-8card"]
    assert ascend and all("no tf32 peak" in r["invalid_reason"] or "RoCE" in r["invalid_reason"] for r in ascend)
    assert any(r["valid"] for r in rows)


def test_planes_the_nodes_nics_cannot_reach_make_the_point_invalid_as_they_refuse_a_plan(catalog, reader_client,
                                                                                        eager_celery):
    """FF's nodes have one computation NIC: a second plane is out of reach, here as in the plan's check."""
    response = reader_client.post("/api/sweeps/", {"plan": FF, "workload": LLAMA,
                                                   "axes": {"cluster.fabric.planes": [1, 2]}}, format="json")
    assert response.status_code == 201, response.json()
    rows = {r["axes"]["cluster.fabric.planes"]: r for r in
            reader_client.get(f"/api/sweeps/{response.json()['id']}/results/").json()["results"]}
    assert rows[1]["valid"] and not rows[2]["valid"]
    assert "each node needs one NIC per plane: 1 NICs do not split into 2 planes" in rows[2]["invalid_reason"]
    plan = reader_client.post("/api/plans/", {"slug": "two-planes", "name": "x", "node_type": "ff-pcie-a100",
                                              "node_count": 64, "switch": "qm8700", "price_book": "fire-flyer-relative",
                                              "planes": 2}, format="json")
    assert plan.status_code == 400 and "1 NICs do not split into 2 planes" in plan.json()["planes"][0]


@pytest.mark.parametrize("body,field", [
    ({"axes": {"cluster.node_count": {"start": 1, "stop": 1e300, "step": 1e-300}}}, "axes.cluster.node_count"),
    ({"axes": AXES, "goal": {"minimize": "cost.capex_total", "constraints": {"metric": "x"}}}, "goal.constraints"),
    ({"axes": AXES, "outputs": ["cost.unpriced"]}, "cost.unpriced"),
    ({"axes": {"plan.switch": ["qm8700", "qm8700"]}}, "axes.plan.switch"),
])
def test_more_bad_sweeps_answer_400(body, field, catalog, reader_client):
    response = reader_client.post("/api/sweeps/", {"plan": FF, "workload": LLAMA, **body}, format="json")
    assert response.status_code == 400 and field in response.json(), response.json()


def test_a_redelivered_chunk_still_records_progress(catalog, reader_client, small_chunks, monkeypatch):
    monkeypatch.setattr("planner.services.submission.sweep_enqueue", lambda sweep: None)
    sweep = Sweep.objects.get(pk=create(reader_client).json()["id"])
    assert sweep_run_chunk(sweep_id=sweep.pk, index=0)
    Sweep.objects.filter(pk=sweep.pk).update(completed_chunks=0)  # as if the worker died before recording
    assert not sweep_run_chunk(sweep_id=sweep.pk, index=0)  # the redelivery
    assert Sweep.objects.get(pk=sweep.pk).completed_chunks == 1


def test_results_are_reused_only_for_the_same_owner(catalog, reader_client, eager_celery, django_user_model):
    from rest_framework.test import APIClient

    first = create(reader_client).json()
    other = APIClient()
    other.force_authenticate(django_user_model.objects.create_user("other3", password="pw-other-1234"))
    theirs = create(other).json()
    assert theirs["reused_from"] is None and theirs["status"] == "done"
    assert reader_client.delete(f"/api/sweeps/{first['id']}/").status_code == 204


def test_an_unfiltered_page_reads_only_its_chunks_and_matches_the_full_read(catalog, reader_client, eager_celery,
                                                                            small_chunks):
    sweep = create(reader_client).json()
    url = f"/api/sweeps/{sweep['id']}/results/"
    fast = reader_client.get(url, {"page": 3, "page_size": 20}).json()
    full = reader_client.get(url, {"page": 3, "page_size": 20, "order_by": "point"}).json()
    assert fast["results"] == full["results"] and fast["count"] == full["count"] == 135
    assert [r["point"] for r in fast["results"]] == list(range(40, 60))


def test_settling_names_the_missing_chunks_or_finishes_the_sweep(catalog, reader_client, small_chunks, monkeypatch):
    """What the workers' lost-chunk watch relies on (tests/planner/test_sweeps_worker.py runs it):
    settling an unfinished sweep names the chunks still to compute, or, with every chunk stored but
    not recorded, finishes it."""
    monkeypatch.setattr("planner.services.submission.sweep_enqueue", lambda sweep: None)
    sweep = Sweep.objects.get(pk=create(reader_client).json()["id"])
    assert sweep_settle(sweep=sweep) == list(range(sweep.chunk_count))
    for index in range(sweep.chunk_count - 1):
        assert sweep_run_chunk(sweep_id=sweep.pk, index=index)
    assert sweep_settle(sweep=sweep) == [sweep.chunk_count - 1]
    assert Sweep.objects.get(pk=sweep.pk).status == "running"
    assert sweep_run_chunk(sweep_id=sweep.pk, index=sweep.chunk_count - 1)
    Sweep.objects.filter(pk=sweep.pk).update(status="running", completed_chunks=0, finished_at=None)  # not recorded
    assert sweep_settle(sweep=sweep) == []
    settled = Sweep.objects.get(pk=sweep.pk)
    assert settled.status == "done" and settled.completed_chunks == settled.chunk_count


def test_the_chart_sample_spans_the_whole_grid_and_keeps_the_goal_points(catalog, priced_ff, reader_client,
                                                                        eager_celery, small_chunks):
    goal = {"minimize": "cost.capex_total", "constraints": [{"metric": "training.step_time_s", "max": 20}],
            "pareto": [["cost.capex_total", "training.step_time_s"]]}
    sweep = create(reader_client, goal=goal).json()
    result = Sweep.objects.get(pk=sweep["id"]).goal_result
    must = {result["optimum"], *result["pareto"][0]["points"]}
    sample = reader_client.get(f"/api/sweeps/{sweep['id']}/sample/", {"points": 10}).json()
    points = [row["point"] for row in sample["results"]]
    assert points == sorted(set(points)) and sample["total_points"] == 135
    assert points[0] == 0 and points[-1] == 134  # spread to both ends, not the first ten
    assert must <= set(points) and set(sample["always"]) == must
    assert len(points) <= 10 + len(must)
    assert reader_client.get(f"/api/sweeps/{sweep['id']}/sample/", {"points": 0}).status_code == 400


def test_exports_run_one_at_a_time_per_user_until_sent(catalog, reader_client, eager_celery, user):
    """While one download of a user's is being built or sent, the next answers 429; the slot is
    freed when the response has been sent. (tests/test_server.py abandons one on the deployed
    server.)"""
    sweep = create(reader_client).json()
    url = f"/api/sweeps/{sweep['id']}/export/"
    first = reader_client.get(url, {"file": "csv"})
    assert first.status_code == 200 and int(first["Content-Length"]) > 0
    busy = reader_client.get(url, {"file": "npz"})
    assert busy.status_code == 429 and "being built or sent" in busy.json()["detail"]
    assert len(b"".join(first.streaming_content)) == int(first["Content-Length"])
    second = reader_client.get(url, {"file": "npz"})
    assert second.status_code == 200
    assert len(b"".join(second.streaming_content)) == int(second["Content-Length"])
    assert reader_client.get(url, {"file": "parquet"}).status_code == 200


def test_the_streamed_npz_holds_every_column_as_the_whole_sweep_does(catalog, reader_client, eager_celery,
                                                                    small_chunks):
    """Written column by column from chunks of 25 points, the NPZ equals the sweep's columns read
    whole: numbers, validity, axis values and invalid reasons as text."""
    from planner.services.sweep_store import sweep_columns

    sweep = create(reader_client).json()
    npz = np.load(io.BytesIO(_download(reader_client, sweep, "npz")), allow_pickle=False)
    whole = sweep_columns(Sweep.objects.get(pk=sweep["id"]))
    assert sorted(npz.files) == sorted(key.replace(":", "__") for key in whole)
    for key, values in whole.items():
        stored = npz[key.replace(":", "__")]
        if values.dtype == object:
            assert stored.tolist() == values.astype(str).tolist(), key
        else:
            np.testing.assert_array_equal(stored, values, err_msg=key)


def test_without_a_worker_a_grid_too_large_for_one_request_is_refused(catalog, reader_client, eager_celery,
                                                                      settings):
    """The embedded default runs a sweep inside its request: past SWEEP_IN_PROCESS_MAX_POINTS it
    answers 400 naming the axes and the way to run it, and stores nothing."""
    settings.SWEEP_IN_PROCESS_MAX_POINTS = 100
    response = create(reader_client)
    assert response.status_code == 400
    assert response.json()["errors"]["axes"] == [
        "the grid has 135 points; without a worker (no REDIS_URL) a sweep runs inside its request, so at most 100 "
        "(SWEEP_IN_PROCESS_MAX_POINTS); start Redis and a Celery worker for up to 5,000,000"]
    assert not Sweep.objects.exists()


@pytest.mark.django_db(transaction=True, serialized_rollback=True)  # the chunk's foreign key is checked at commit
def test_a_chunk_finished_after_its_sweep_was_deleted_stores_nothing_and_fails_nothing(catalog, reader_client,
                                                                                        monkeypatch):
    """The owner deletes a sweep while a worker computes one of its chunks: storing it meets the
    sweep's absence (a foreign-key error), and the worker stops quietly instead of raising (which
    logged the task as failed)."""
    from planner.services import sweeps

    monkeypatch.setattr("planner.services.submission.sweep_enqueue", lambda sweep: None)
    sweep = Sweep.objects.get(pk=create(reader_client).json()["id"])
    compute = sweeps.evaluate_chunk

    def deleted_meanwhile(*args, **kwargs):
        Sweep.objects.filter(pk=sweep.pk).delete()
        return compute(*args, **kwargs)

    monkeypatch.setattr(sweeps, "evaluate_chunk", deleted_meanwhile)
    assert sweep_run_chunk(sweep_id=sweep.pk, index=0) is False
    assert not SweepChunk.objects.filter(sweep_id=sweep.pk).exists()


def test_a_data_parallel_axis_sizes_the_cluster_to_the_job(catalog, reader_client, eager_celery):
    """``job.data_parallel``: each point's job takes TP x PP x DP GPUs (LLaMa-13B's TP 2 x PP 4 with
    the swept TP) and the cluster the nodes that hold them; beside a node-count or GPU axis it is
    refused, naming it."""
    response = create(reader_client, axes={"job.data_parallel": [1, 4, 16], "workload.tp": [1, 2]})
    assert response.status_code == 201, response.json()
    rows = reader_client.get(f"/api/sweeps/{response.json()['id']}/results/").json()["results"]
    assert len(rows) == 6
    for row in rows:
        gpus = row["axes"]["job.data_parallel"] * row["axes"]["workload.tp"] * 4
        assert row["outputs"]["cluster.gpus"] == 8 * -(-gpus // 8)  # whole 8-GPU nodes
    clash = create(reader_client, axes={"job.data_parallel": [1, 4], "cluster.node_count": [16]})
    assert clash.status_code == 400 and "axes.job.data_parallel" in clash.json()["errors"]
