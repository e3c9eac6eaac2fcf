"""The twin simulator: failures by category, ETTR against the closed form, exact persistence."""
import numpy as np
import pytest

from simcore import ScenarioError
from simcore.reliability import (
    ettr_closed_form,
    ettr_monte_carlo,
    fire_flyer_categories,
    interruption_rate_per_hour,
    optimal_interval_s,
)
from simcore.twin import FAILED, HEALTHY, REPAIR, Job, Twin


def twin_with(job_nodes=1000, delta=300.0, restart=1200.0, seed=1):
    categories = fire_flyer_categories()
    rate = interruption_rate_per_hour(categories, job_nodes * 8, job_nodes) / 3600
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
    assert len(first + second) > 50


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
