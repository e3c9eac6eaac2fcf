"""The twin simulator: failures by category, ETTR against the closed form, exact persistence."""
import numpy as np
import pytest

from simcore import ScenarioError
from simcore.formulas.reliability import (
    ettr_closed_form,
    ettr_monte_carlo,
    fire_flyer_categories,
    interruption_rate_per_hour,
    optimal_interval_s,
    unit_counts,
)
from simcore.tools.twin import CUT_OFF, FAILED, HEALTHY, REPAIR, WAITING, WEEK_S, Fabric, Job, Twin


def twin_with(job_nodes=1000, delta=300.0, restart=1200.0, seed=1):
    categories = fire_flyer_categories()
    rate = interruption_rate_per_hour(categories, unit_counts(job_nodes * 8, job_nodes, link=job_nodes,
                                                              nic=job_nodes)) / 3600
    tau = float(optimal_interval_s(delta, rate))
    twin = Twin(nodes=1250, gpus_per_node=8, jobs=[Job("big", job_nodes, 1e12, tau, delta, restart)],
                rng=np.random.default_rng(seed))
    return twin, tau, delta, restart, rate


def test_long_run_ettr_matches_the_closed_form_and_monte_carlo():
    twin, tau, delta, restart, rate = twin_with()
    for _ in range(365 * 24):
        twin.advance(3600.0)
    closed = float(ettr_closed_form(tau, delta, restart, rate))
    simulated = twin.metrics()["jobs"][0]["ettr"]
    assert simulated == pytest.approx(closed, abs=0.02)
    monte_carlo = ettr_monte_carlo(tau, delta, restart, rate, segments=20_000, replicas=20,
                                   rng=np.random.default_rng(2)).mean()
    assert simulated == pytest.approx(monte_carlo, abs=0.02)
    assert twin.metrics()["interruptions"] == pytest.approx(rate * 365 * 86400, rel=0.05)


def test_failures_take_nodes_out_and_jobs_move_to_spares():
    twin, *_ = twin_with(job_nodes=100)
    xid79 = [c.key for c in twin.categories].index("xid-79")  # GPU fallen off the bus: replace, 72 h
    node = int(np.flatnonzero(twin.node_job == 0)[0])
    events = twin.apply_failure(xid79, gpu=node * 8 + 3)
    assert twin.gpu_state[node * 8 + 3] == REPAIR and twin.node_state[node] == REPAIR
    assert twin.node_job[node] == -1 and (twin.node_job == 0).sum() == 100
    assert [e.kind for e in events][:2] == ["failure", "job-interrupted"]
    twin.advance(73 * 3600.0)
    assert twin.node_state[node] == HEALTHY and twin.gpu_state[node * 8 + 3] == HEALTHY
    assert any(e.kind == "repaired" for e in twin.advance(0.0)) is False
    xid74 = [c.key for c in twin.categories].index("xid-74")
    twin.apply_failure(xid74, gpu=5)
    assert twin.gpu_state[5] == FAILED


def test_persisted_state_continues_exactly():
    a, *_ = twin_with(seed=7)
    b, *_ = twin_with(seed=7)
    for _ in range(50):
        a.advance(1800.0)
    first = [(e.time_s, e.kind, e.category, e.gpu, e.node) for _ in range(25) for e in b.advance(1800.0)]
    restored = Twin.from_bytes(b.to_bytes(), nodes=1250, gpus_per_node=8, jobs=b.jobs)
    second = [(e.time_s, e.kind, e.category, e.gpu, e.node) for _ in range(25) for e in restored.advance(1800.0)]
    assert restored.time_s == a.time_s
    assert np.array_equal(restored.node_state, a.node_state) and np.array_equal(restored.gpu_state, a.gpu_state)
    assert restored.metrics() == a.metrics()
    assert len(first + second) > 20


def test_bad_twins_are_refused():
    with pytest.raises(ScenarioError, match="2000 nodes; the cluster has 1000"):
        Twin(nodes=1000, gpus_per_node=8, jobs=[Job("x", 2000, 1, 1, 1, 1)])
    with pytest.raises(ScenarioError) as raised:
        Twin(nodes=10, gpus_per_node=8, jobs=[Job("x", 5, 1, 0, 1, 1)])
    assert raised.value.field == "twin.jobs.0.interval_s"
    twin, *_ = twin_with()
    with pytest.raises(ScenarioError, match="GPU index below 10000"):
        twin.apply_failure(0, gpu=10_000)


def test_finished_jobs_free_their_nodes_for_waiting_ones_and_drains_survive_repairs():
    twin = Twin(nodes=10, gpus_per_node=8, jobs=[Job("short", 6, 3600.0, 600.0, 10.0, 0.0),
                                                 Job("next", 6, 1e9, 600.0, 10.0, 0.0)],
                categories=[], rng=np.random.default_rng(0))
    assert twin.metrics()["jobs"][1]["state"] == "waiting for nodes"
    events = twin.advance(2 * 3600.0)
    assert "job-done" in [e.kind for e in events]
    assert twin.metrics()["jobs"][1]["state"] in ("restarting", "running")
    twin2, *_ = twin_with(job_nodes=100)
    twin2.set_drained(7, True)
    xid79 = [c.key for c in twin2.categories].index("xid-79")
    twin2.apply_failure(xid79, gpu=7 * 8)
    twin2.advance(80 * 3600.0)
    assert twin2.node_state[7] == 4 and twin2.node_job[7] == -1  # repaired, still drained
    with pytest.raises(ScenarioError, match="already drained"):
        twin2.set_drained(7, True)


FABRIC = Fabric(nics_per_node=1, links=300, leaves=10, switches=15)  # 100 nodes, 10 per leaf


def index(twin, key):
    return [c.key for c in twin.categories].index(key)


def test_a_job_caused_fault_stops_its_job_and_a_leaf_switch_under_both_stops_both():
    twin = Twin(nodes=100, gpus_per_node=8, fabric=FABRIC, rng=np.random.default_rng(4),
                jobs=[Job("a", 45, 1e9, 3600.0, 60.0, 300.0, fault_factor=1.0), Job("b", 45, 1e9, 3600.0, 60.0, 300.0)])
    twin.advance(600.0)
    events = twin.apply_job_fault(index(twin, "xid-31"), 1)
    assert [e.kind for e in events] == ["failure", "job-interrupted"] and twin.job_interruptions.tolist() == [0, 1]
    with pytest.raises(ScenarioError) as raised:
        twin.apply_failure(index(twin, "xid-31"), gpu=0)
    assert raised.value.field == "category"
    # Leaf 4 serves nodes 40-49: job a holds 40-44 and job b 45-49 (jobs fill nodes in order).
    assert set(twin.node_job[40:50]) == {0, 1}
    events = twin.apply_failure(index(twin, "switch"), part=4)
    assert twin.job_interruptions.tolist() == [1, 2]
    assert sum(e.kind == "job-interrupted" for e in events) == 2
    assert twin.metrics()["leaf_switches_down"] == 1 and np.all(twin.node_job[40:50] == -1)
    # Its ten nodes are up but cut off: viewers see them so, and they count out of service.
    assert np.all(twin.node_state[40:50] == HEALTHY) and np.all(twin.node_view()[40:50] == CUT_OFF)
    metrics = twin.metrics()
    assert metrics["nodes_by_state"]["cut off (leaf switch down)"] == 10 and metrics["nodes_by_state"]["healthy"] == 90
    assert metrics["availability"] == pytest.approx(0.9)
    # The jobs restart on spares (10 nodes are idle): held, but not running until their restart ends.
    assert (twin.node_job >= 0).sum() == 90 and metrics["utilization"] == 0
    twin.advance(600.0)
    assert twin.metrics()["utilization"] == pytest.approx(0.9)
    twin.advance(9 * 3600.0)  # the switch is back after its 8-h repair
    assert twin.metrics()["leaf_switches_down"] == 0 and (twin.node_job >= 0).sum() == 90
    assert twin.metrics()["availability"] == 1.0 and np.all(twin.node_view() == twin.node_state)
    # A node's own link takes only that node's job out; a switch-to-switch link stops its leaf's jobs.
    before = twin.job_interruptions.copy()
    node = int(np.flatnonzero(twin.node_job == 0)[0])
    twin.apply_failure(index(twin, "ib-link"), part=node)
    assert (twin.job_interruptions - before).tolist() == [1, 0] and twin.node_state[node] == REPAIR
    shared_leaf = int(twin._node_leaf[np.flatnonzero(twin.node_job == 1)[-1]])
    before = twin.job_interruptions.copy()
    twin.apply_failure(index(twin, "ib-link"), part=100 + shared_leaf)  # past the 100 node links
    assert (twin.job_interruptions - before)[1] == 1
    with pytest.raises(ScenarioError) as raised:
        twin.apply_failure(index(twin, "ib-link"), part=300)
    assert raised.value.field == "target.part"


def test_each_job_of_two_reaches_its_closed_form_ettr():
    """A year of two jobs on a Fire-Flyer-sized slice: a new job (its own faults at FF's rate)
    and a production one; each job's ETTR agrees with its closed form and the Monte Carlo."""
    twin = Twin(nodes=300, gpus_per_node=8, fabric=Fabric(1, 800, 20, 30), rng=np.random.default_rng(8),
                jobs=[Job("new", 120, 1e12, 1800.0, 60.0, 600.0, fault_factor=1.0),
                      Job("production", 120, 1e12, 3600.0, 60.0, 600.0)])
    for _ in range(365 * 24):
        twin.advance(3600.0)
    jobs = twin.metrics()["jobs"]
    assert jobs[0]["interruptions"] > 1.5 * jobs[1]["interruptions"]  # the software Xids stop only the new job
    for i, job in enumerate(jobs):
        spec = twin.jobs[i]
        rate = twin.expected_rate_per_s(i)
        monte_carlo = ettr_monte_carlo(spec.interval_s, spec.checkpoint_s, spec.restart_s, rate, segments=10_000,
                                       replicas=20, rng=np.random.default_rng(i)).mean()
        assert job["ettr"] == pytest.approx(job["ettr_closed_form"], abs=0.02)
        assert job["ettr"] == pytest.approx(monte_carlo, abs=0.02)
        assert job["interruptions"] == pytest.approx(rate * 365 * 86400, rel=0.1)


def test_repeated_faults_exclude_a_node_until_the_weekly_validation():
    twin = Twin(nodes=20, gpus_per_node=8, exclude_after=3, rng=np.random.default_rng(0), categories=[
        c for c in fire_flyer_categories() if c.key == "xid-74"], jobs=[Job("j", 10, 1e9, 3600.0, 60.0, 60.0)])
    twin.time_s = 86400.0
    for _ in range(2):
        twin.apply_failure(0, gpu=3)
        twin.advance(3 * 3600.0)  # the 2-h reboot is over
    assert twin.node_state[0] == HEALTHY
    events = twin.apply_failure(0, gpu=3)
    assert "excluded" in [e.kind for e in events]
    assert twin.repair_until[0] == WEEK_S
    twin.advance(WEEK_S - twin.time_s + 1.0)
    assert twin.node_state[0] == HEALTHY
    with pytest.raises(ScenarioError) as raised:
        Twin(nodes=2, gpus_per_node=8, jobs=[Job("x", 1, 1, 1, 1, 1, fault_factor=-1)])
    assert raised.value.field == "twin.jobs.0.fault_factor"


def test_a_state_saved_before_fabric_components_still_loads():
    twin, *_ = twin_with(job_nodes=100)
    twin.advance(86400.0)
    import io
    import json

    with np.load(io.BytesIO(twin.to_bytes())) as npz:
        old = {k: npz[k] for k in npz.files if k not in ("leaf_repair_until", "node_fault_times")}
    buffer = io.BytesIO()
    np.savez_compressed(buffer, **old)
    restored = Twin.from_bytes(buffer.getvalue(), nodes=1250, gpus_per_node=8, jobs=twin.jobs)
    assert restored.time_s == twin.time_s and json.dumps(restored.metrics()) == json.dumps(twin.metrics())


def _racks(racks, *jobs):
    """GB200-like racks of 18 four-GPU trays; a node-level fault category is the first Xid's."""
    return Twin(nodes=18 * racks, gpus_per_node=4, fabric=Fabric(4, 18 * racks * 4, racks, racks, domain_nodes=18),
                jobs=list(jobs), rng=np.random.default_rng(0))


def _node_fault(twin):
    return next(i for i, c in enumerate(twin.categories) if c.unit == "node" and c.repair_h > 0 and c.interrupts_job)


def _racks_of(twin, job=0):
    return np.bincount(np.flatnonzero(twin.node_job == job) // 18, minlength=twin.nodes // 18)


def test_a_failed_tray_is_replaced_from_its_own_rack_and_a_rack_out_of_spares_waits():
    twin = _racks(2, Job("main", 32, 1e9, 3600.0, 60.0, 60.0, nodes_per_domain=16))
    assert list(_racks_of(twin)) == [16, 16]  # two spare trays in each rack
    fault = _node_fault(twin)
    for lost in range(2):
        node = int(np.flatnonzero((twin.node_job == 0) & (np.arange(36) < 18))[0])
        twin.apply_failure(fault, node=node)
        assert list(_racks_of(twin)) == [16, 16], lost  # refilled from rack 0's spares, never rack 1's
    node = int(np.flatnonzero((twin.node_job == 0) & (np.arange(36) < 18))[0])
    events = twin.apply_failure(fault, node=node)
    assert twin.job_state[0] == WAITING and any(e.kind == "job-waiting" for e in events)  # for the repair
    assert list(_racks_of(twin)) == [15, 16]  # rack 1's two idle trays are not taken


def test_a_rack_that_cannot_refill_moves_the_jobs_share_whole_to_an_idle_rack():
    twin = _racks(3, Job("main", 32, 1e9, 3600.0, 60.0, 60.0, nodes_per_domain=16))
    assert sorted(_racks_of(twin)) == [0, 16, 16]
    fault, first = _node_fault(twin), int(np.flatnonzero(_racks_of(twin))[0])
    for _ in range(3):
        node = int(np.flatnonzero((twin.node_job == 0) & (np.arange(54) // 18 == first))[0])
        twin.apply_failure(fault, node=node)
    assert _racks_of(twin)[first] == 0 and sorted(_racks_of(twin)) == [0, 16, 16]
    assert twin.job_state[0] != WAITING  # restarting on the new rack


def test_over_a_year_of_failures_no_job_ever_holds_trays_outside_its_racks():
    twin = _racks(4, Job("a", 32, 1e12, 3600.0, 60.0, 60.0, nodes_per_domain=16),
                  Job("b", 18, 1e12, 3600.0, 60.0, 60.0))
    for _ in range(365):
        twin.advance(86400.0)
        for job in range(2):
            held = _racks_of(twin, job)
            assert (held <= twin.job_domain_nodes[job]).all()
    assert twin.metrics()["interruptions"] > 0
    restored = Twin.from_bytes(twin.to_bytes(), nodes=twin.nodes, gpus_per_node=4, jobs=twin.jobs,
                               fabric=twin.fabric)
    assert (restored.job_domain_nodes == twin.job_domain_nodes).all()
    with pytest.raises(ScenarioError) as error:
        _racks(1, Job("big", 18, 1e9, 3600.0, 60.0, 60.0, nodes_per_domain=19))
    assert error.value.field == "twin.jobs.0.nodes_per_domain"
