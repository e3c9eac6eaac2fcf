"""Reliability: the Xid generator, Monte Carlo ETTR against the closed form, intervals, spares."""
import numpy as np
import pytest
from scipy import special, stats

from simcore import evaluate
from simcore.errors import ScenarioError
from simcore.formulas.reliability import (
    FF_LINKS,
    FF_XID_COUNTS,
    JOB,
    LLAMA3_TABLE5,
    RESTART_PROFILES,
    XID_CLASSES,
    binomial_quantile,
    daly_interval_s,
    ettr_closed_form,
    ettr_monte_carlo,
    fire_flyer_categories,
    node_availability,
    optimal_interval_s,
    sample_category_counts,
    spares_needed,
    unit_counts,
    young_interval_s,
)
from simcore.tools.references import FF_2ZONE, FF_3LAYER, LLAMA3_405B, LLAMA3_CLUSTER, LLAMA_13B

FF_UNITS = unit_counts(10_000, 1_250, link=FF_LINKS)


def test_xid_generator_reproduces_the_yearly_mix():
    categories = fire_flyer_categories()
    keys = [c.key for c in categories]
    counts = sample_category_counts(categories, FF_UNITS, 8760, replicas=1,
                                    rng=np.random.default_rng(2024))[0]
    observed = np.array([sum(counts[keys.index(f"xid-{code}")] for code in codes) for codes in XID_CLASSES.values()])
    expected = np.array([sum(FF_XID_COUNTS[code][1] for code in codes) for codes in XID_CLASSES.values()])
    # Chi-square on the class mix (all expected counts >= 5 once GSP joins the uncorrectable class).
    merged_obs = np.append(observed[:3], observed[3:].sum())
    merged_exp = np.append(expected[:3], expected[3:].sum())
    merged_exp = merged_exp / merged_exp.sum() * merged_obs.sum()
    assert stats.chisquare(merged_obs, merged_exp).pvalue > 0.01
    assert observed[0] / observed.sum() == pytest.approx(0.4257, abs=0.01)  # Xid 74 share


def test_xid_generator_mean_matches_the_table_over_many_years():
    categories = fire_flyer_categories()
    counts = sample_category_counts(categories, FF_UNITS, 8760, replicas=400, rng=np.random.default_rng(7))
    xid = [i for i, c in enumerate(categories) if c.key.startswith("xid")]
    assert counts[:, xid].sum(axis=1).mean() == pytest.approx(12_970, rel=0.005)


GRID = [(rate_h, delta, restart) for rate_h in (1 / 2, 1 / 12, 1 / 72) for delta in (30.0, 300.0)
        for restart in (120.0, 1800.0)]


@pytest.mark.parametrize("rate_h,delta,restart", GRID)
def test_monte_carlo_ettr_agrees_with_the_closed_form(rate_h, delta, restart):
    rate_s = rate_h / 3600
    tau = optimal_interval_s(delta, rate_s)
    closed = ettr_closed_form(tau, delta, restart, rate_s)
    simulated = ettr_monte_carlo(tau, delta, restart, rate_s, segments=2_000, replicas=200,
                                 rng=np.random.default_rng(11)).mean()
    assert simulated == pytest.approx(closed, abs=0.01)
    assert 0 < closed < 1


def test_monte_carlo_grid_optimum_matches_the_lambert_w_optimum():
    rate_s, delta, restart = 1 / (6 * 3600), 120.0, 600.0
    exact = optimal_interval_s(delta, rate_s)
    grid = exact * np.array([0.25, 0.5, 1.0, 2.0, 4.0])
    simulated = ettr_monte_carlo(grid, delta, restart, rate_s, segments=4_000, replicas=300,
                                 rng=np.random.default_rng(3)).mean(axis=0)
    assert np.argmax(simulated) == 2
    closed = ettr_closed_form(grid, delta, restart, rate_s)
    assert np.argmax(closed) == 2
    fine = np.linspace(0.5, 2.0, 301) * exact
    assert fine[np.argmax(ettr_closed_form(fine, delta, restart, rate_s))] == pytest.approx(exact, rel=0.01)


def test_young_and_daly_approach_the_exact_optimum_for_cheap_checkpoints():
    rate_s, delta = 1 / (24 * 3600), 60.0
    exact = optimal_interval_s(delta, rate_s)
    assert young_interval_s(delta, rate_s) == pytest.approx(exact, rel=0.05)
    assert daly_interval_s(delta, rate_s) == pytest.approx(exact, rel=0.01)


def test_ettr_without_failures_only_pays_checkpoints():
    assert ettr_closed_form(300.0, 30.0, 600.0, 0.0) == pytest.approx(300 / 330)


def test_spares_match_a_brute_force_binomial_search():
    for nodes, availability in ((1250, 0.999), (128, 0.99), (16, 0.95), (1, 0.5)):
        brute = next(s for s in range(500) if stats.binom.sf(nodes - 1, nodes + s, availability) >= 0.99)
        assert spares_needed(nodes, availability, 0.99) == brute
    assert np.array_equal(spares_needed(np.array([1250, 16]), 0.999), [4, 1])


def test_availability():
    assert node_availability(0.01, 10.0) == pytest.approx(1 / 1.1)


def _job(cluster=FF_2ZONE, workload=None, **reliability):
    cluster = {**cluster, "reliability": {**cluster.get("reliability", {}), **reliability}}
    return evaluate({"cluster": cluster, "workload": workload or {**LLAMA_13B, "gpus": 512}})["reliability"]


def test_scenario_reliability_for_a_job():
    result = evaluate({"cluster": FF_2ZONE, "workload": {**LLAMA_13B, "gpus": 512},
                       "options": {"monte_carlo_replicas": 50, "seed": 5}})
    rel = result["reliability"]
    # A production job: platform faults on its 512 GPUs, 64 nodes, 64 NICs and its share of the
    # fabric's links and switches; the software Xids (job-caused) and Xid 45 (a consequence) do not stop it.
    share = 64 / 1240
    links = (1240 + 360) + 1520 + 80  # endpoint, leaf-spine (each leaf gives one to the zones) and inter-zone
    units = {"gpu": 512, "node": 64, "nic": 64, "link": links * share, "switch": 122 * share}
    expected = sum(c.rate_per_unit_hour * units[c.unit] for c in fire_flyer_categories()
                   if c.interrupts_job and c.cause != JOB)
    assert not next(c for c in fire_flyer_categories() if c.key == "xid-45").interrupts_job
    assert {c.key for c in fire_flyer_categories() if c.cause == JOB} == {"xid-13", "xid-31", "xid-43", "xid-45"}
    assert rel["job_interruptions_per_day"] == pytest.approx(expected * 24)
    assert rel["job_caused_interruptions_per_day"] == 0
    assert sum(rel["job_by_category_per_day"].values()) == pytest.approx(rel["job_interruptions_per_day"])
    assert rel["checkpoint_interval_s"] == rel["optimal_interval_s"]
    assert rel["ettr"] == rel["ettr_at_optimum"]
    fast = RESTART_PROFILES["fast-restart"]
    crash = (fast.crash_detection_s + fast.reschedule_s + rel["checkpoint_load_time_s"] + fast.init_base_s
             + fast.init_s_per_rank * 512 + fast.warmup_s)
    assert rel["restart_by_kind_s"]["platform-crash"] == pytest.approx(crash)
    assert rel["restart_by_kind_s"]["platform-hang"] == pytest.approx(crash - fast.crash_detection_s
                                                                      + fast.collective_timeout_s)
    assert rel["restart_by_kind_s"]["job-crash"] == pytest.approx(crash - fast.reschedule_s)
    # The IB link flash cuts are hangs: the effective restart lies between the crash and hang restarts.
    assert crash < rel["restart_time_s"] < rel["restart_by_kind_s"]["platform-hang"]
    assert sum(rel["restart_parts_s"].values()) == pytest.approx(rel["restart_time_s"], rel=0.02)
    assert rel["monte_carlo"]["ettr_mean"] == pytest.approx(rel["ettr"], abs=0.01)
    assert rel["spare_nodes"] >= 1


def test_a_new_job_adds_its_own_faults_and_the_fleet_count_stays():
    production, new = _job(), _job(workload={**LLAMA_13B, "gpus": 512, "job_fault_factor": 1.0})
    software = sum(count for code, (_, count, _, _) in FF_XID_COUNTS.items() if code in (13, 31, 43))
    assert new["job_caused_interruptions_per_day"] == pytest.approx(software / (10_000 * 365) * 512)
    assert new["job_interruptions_per_day"] == pytest.approx(production["job_interruptions_per_day"]
                                                             + new["job_caused_interruptions_per_day"])
    assert new["events_per_day"] == production["events_per_day"]
    assert new["ettr"] < production["ettr"]


def test_the_fire_flyer_cluster_stops_a_production_job_only_for_platform_faults():
    rel = evaluate({"cluster": {**FF_2ZONE, "node_count": 1250}})["reliability"]
    xid = sum(v for k, v in rel["by_category_per_day"].items() if k.startswith("xid"))
    assert xid * 365 == pytest.approx(12_970)
    software = sum(rel["by_category_per_day"][f"xid-{code}"] for code in XID_CLASSES["software"])
    deferred = rel["by_category_per_day"]["xid-63"]  # a row remap waits for the next reset: no stop
    assert rel["platform_interruptions_per_day"] == pytest.approx(rel["events_per_day"] - software - deferred)
    assert 15 < rel["platform_interruptions_per_day"] < 18  # not the 35.5 a day that counted every Xid


def test_more_optics_more_fabric_interruptions_and_repair_work():
    two, three = (evaluate({"cluster": c})["reliability"] for c in (FF_2ZONE, FF_3LAYER))
    assert three["fabric_interruptions_per_day"] > two["fabric_interruptions_per_day"]
    assert three["fabric_repair_hours_per_day"] > two["fabric_repair_hours_per_day"]
    assert 0 < two["fabric_interruption_share"] < three["fabric_interruption_share"] < 1
    # Four rails of NICs per node (the Ascend talk's multi-rail) against one: four times the endpoint links.
    multi = evaluate({"cluster": {**FF_2ZONE, "node": {**FF_2ZONE["node"], "compute_nics": 4},
                                  "fabric": {**FF_2ZONE["fabric"], "layers": 3, "zones": 1, "interzone_switches": 0,
                                             "rails": 4}}})["reliability"]
    assert multi["fabric_interruptions_per_day"] > 2 * three["fabric_interruptions_per_day"]


def test_llama3_profile_reproduces_table_5_on_its_own_build():
    assert sum(row[3] for row in LLAMA3_TABLE5) == 419
    rel = _job(LLAMA3_CLUSTER, LLAMA3_405B)
    assert rel["job_interruptions_per_day"] == pytest.approx(419 / 54, rel=0.01)
    production = _job(LLAMA3_CLUSTER, {**LLAMA3_405B, "job_fault_factor": 0.0})
    assert production["job_interruptions_per_day"] == pytest.approx((419 - 54) / 54, rel=0.01)


def test_asynchronous_checkpoints_stall_less_and_lose_the_write_time():
    sync, asynchronous = _job(), _job(checkpoint_mode="async")
    assert asynchronous["checkpoint_time_s"] < sync["checkpoint_time_s"]
    assert asynchronous["checkpoint_write_time_s"] == sync["checkpoint_write_time_s"]
    assert asynchronous["restart_parts_s"]["checkpoint_lag"] == sync["checkpoint_write_time_s"]
    assert asynchronous["checkpoint_interval_s"] >= asynchronous["checkpoint_write_time_s"]
    with pytest.raises(ScenarioError) as error:
        _job(checkpoint_mode="async", checkpoint_interval_s=sync["checkpoint_write_time_s"] / 2)
    assert error.value.field == "cluster.reliability.checkpoint_interval_s"


def test_in_memory_copies_load_over_the_nics_and_overrides_replace_profile_parts():
    from_storage, from_peers = _job(), _job(checkpoint_in_memory=True)
    assert from_peers["checkpoint_load_bound"] == "peer host memory over the compute NICs"
    assert from_peers["checkpoint_load_time_s"] != from_storage["checkpoint_load_time_s"]
    slow = _job(restart_profile="ascend-10k-2025", init_s_per_rank=1.0)
    assert slow["restart_parts_s"]["init"] == pytest.approx(512.0)
    assert _job(restart_s=42.0)["restart_time_s"] == 42.0
    for field, value in (("collective_timeout_s", -1), ("restart_profile", "no-such-platform"),
                         ("profile", "no-such-profile")):
        with pytest.raises(ScenarioError) as error:
            _job(**{field: value})
        assert error.value.field == f"cluster.reliability.{field}"


def test_without_a_storage_plane_the_checkpoint_cost_is_unknown_not_free():
    no_storage = {**FF_2ZONE, "storage": {}}
    result = evaluate({"cluster": no_storage, "workload": {**LLAMA_13B, "gpus": 512, "tokens_to_train": 1e12},
                       "options": {"monte_carlo_replicas": 4}})
    rel = result["reliability"]
    assert rel["checkpoint_bound"] == "no storage plane: unknown"
    for key in ("checkpoint_time_s", "checkpoint_write_time_s", "checkpoint_load_time_s", "ettr"):
        assert rel[key] is None, key
    assert result["training"]["time_to_train_days"] is None
    assert "ettr_mean" not in rel["monte_carlo"] and rel["monte_carlo"]["events_mean"]


def test_an_external_storage_system_bounds_checkpoints_by_its_rate_and_the_nodes_nics():
    cluster = {**LLAMA3_CLUSTER, "storage": {"external_write_gbyte_s": 2000.0, "external_read_gbyte_s": 7000.0}}
    result = evaluate({"cluster": cluster, "workload": LLAMA3_405B})
    rel = result["reliability"]
    size = rel["checkpoint_bytes"]
    assert rel["checkpoint_bound"] == "storage aggregate"
    assert rel["checkpoint_write_time_s"] == pytest.approx(size / 2000e9 + 0.77)
    assert rel["checkpoint_load_time_s"] == pytest.approx(size / 7000e9)
    narrow = {**cluster, "node_count": 4}  # 4 nodes x 8 x 400 Gb/s = 1.6 TB/s of NICs, under the system's 2
    narrow_rel = evaluate({"cluster": narrow, "workload": {**LLAMA3_405B, "gpus": 32, "tp": 8, "pp": 4,
                                                           "global_batch": 16}})["reliability"]
    assert narrow_rel["checkpoint_bound"] == "per-node write rate"
    with pytest.raises(ScenarioError) as error:
        evaluate({"cluster": {**FF_2ZONE, "storage": {**FF_2ZONE["storage"], "external_write_gbyte_s": 100.0}}})
    assert error.value.field == "cluster.storage.external_write_gbyte_s"


def test_llama3_checkpoints_every_few_minutes_on_tectonic():
    """With the 2 TB/s Meta describes, the optimum is minutes apart, asynchronous or not."""
    for mode in ("async", "sync"):
        rel = _job(LLAMA3_CLUSTER, LLAMA3_405B, checkpoint_mode=mode)
        assert 60 < rel["checkpoint_interval_s"] < 600, mode


def test_in_memory_checkpoints_stall_for_the_snapshot_and_the_peer_copy_only():
    """Closed form: snapshot = bytes / GPUs / PCIe + fixed; peer copy = bytes / nodes / NIC rate; the
    storage write leaves the critical path."""
    result = evaluate({"cluster": {**FF_2ZONE, "reliability": {"checkpoint_in_memory": True}},
                       "workload": {**LLAMA_13B, "gpus": 512}})
    rel = result["reliability"]
    size = rel["checkpoint_bytes"]
    snapshot_s = size / 512 / (FF_2ZONE["node"]["pcie_bw_gbyte_s"] * 1e9) + 0.77
    peer_s = size / 64 / (FF_2ZONE["node"]["compute_nics"] * FF_2ZONE["node"]["compute_nic_gbit_s"] / 8 * 1e9)
    assert rel["checkpoint_peer_copy_s"] == pytest.approx(peer_s)
    assert rel["checkpoint_time_s"] == pytest.approx(snapshot_s + peer_s)
    assert rel["checkpoint_time_s"] < _job()["checkpoint_time_s"]
    asynchronous = _job(checkpoint_in_memory=True, checkpoint_mode="async")
    assert asynchronous["checkpoint_time_s"] == pytest.approx(snapshot_s)
    assert asynchronous["restart_parts_s"]["checkpoint_lag"] == pytest.approx(peer_s)
    no_storage = evaluate({"cluster": {**FF_2ZONE, "storage": {}, "reliability": {"checkpoint_in_memory": True}},
                           "workload": {**LLAMA_13B, "gpus": 512}})["reliability"]
    assert no_storage["checkpoint_time_s"] == pytest.approx(snapshot_s + peer_s)
    assert no_storage["checkpoint_write_time_s"] is None


def test_per_node_rate_profile():
    cluster = {**FF_2ZONE, "reliability": {"profile": "per-node-rate", "failures_per_1000_node_days": 6.5}}
    rel = evaluate({"cluster": cluster})["reliability"]
    assert rel["platform_interruptions_per_day"] == pytest.approx(6.5 / 1000 * 1240)


def test_monte_carlo_of_a_segment_that_never_completes_gives_zero_not_an_error():
    ettr = ettr_monte_carlo(np.array([3600.0, 1e9]), 60.0, 600.0, 1 / 3600, segments=10, replicas=5,
                            rng=np.random.default_rng(0))
    assert ettr.shape == (5, 2)
    assert np.all(ettr[:, 1] == 0) and np.all(ettr[:, 0] > 0)


def test_the_effective_restart_matches_restarts_of_mixed_kinds_simulated():
    """A failure during a restart starts the restart of its own kind: the mean time from a failure
    to a completed restart, simulated attempt by attempt, is the closed form's (e^(lambda R) - 1) / lambda."""
    from simcore.formulas.reliability import CRASH, HANG, PLATFORM, restart_time_s

    rate_s, restarts, shares = 1 / 2000, np.array([100.0, 2000.0]), np.array([0.7, 0.3])
    kinds = {(PLATFORM, CRASH): shares[0] * rate_s * 3600, (PLATFORM, HANG): shares[1] * rate_s * 3600}
    timing = {"crash_detection_s": 100.0, "collective_timeout_s": 2000.0, "reschedule_s": 0.0, "init_base_s": 0.0,
              "init_s_per_rank": 0.0, "warmup_s": 0.0}
    effective, _, by_kind = restart_time_s(kinds, timing, 1, 0.0, 0.0)
    assert by_kind["platform-hang"] == 2000.0 and 100.0 < effective < shares @ restarts
    rng = np.random.default_rng(5)
    samples = 200_000
    total, pending = np.zeros(samples), np.ones(samples, bool)
    kind = rng.choice(2, samples, p=shares)
    while pending.any():
        next_failure = rng.exponential(1 / rate_s, samples)
        done = pending & (next_failure >= restarts[kind])
        total += np.where(done, restarts[kind], np.where(pending, next_failure, 0.0))
        pending &= ~done
        kind = np.where(pending, rng.choice(2, samples, p=shares), kind)
    assert total.mean() == pytest.approx(np.expm1(rate_s * effective) / rate_s, rel=0.01)


def test_a_plan_whose_rates_are_all_zero_has_an_ettr_of_one_everywhere():
    from simcore.tools.charts import curves

    rates = {c.key: 0.0 for c in fire_flyer_categories()}
    document = {"cluster": {**FF_2ZONE, "reliability": {"category_rates": rates}},
                "workload": {**LLAMA_13B, "gpus": 512}, "options": {"monte_carlo_replicas": 10}}
    with np.errstate(all="raise"):
        rel = evaluate(document)["reliability"]
        drawn = curves(document)
    assert rel["ettr"] == rel["ettr_at_optimum"] == rel["monte_carlo"]["ettr_mean"] == 1.0
    assert rel["optimal_interval_s"] is None  # infinite: never checkpoint
    assert set(drawn["ettr_vs_restart"]["ettr"]) == {1.0}


def test_link_flaps_under_the_retry_window_stall_the_job_instead_of_stopping_it():
    stops, flaps = _job(), _job(link_flap_share=0.5, link_flap_s=2.0)
    link_stops = stops["job_by_category_per_day"]["ib-link"]
    assert flaps["job_by_category_per_day"]["ib-link"] == pytest.approx(link_stops / 2)
    assert "ib-link-flap" not in flaps["job_by_category_per_day"]  # it does not stop the job
    assert flaps["job_interruptions_per_day"] == pytest.approx(stops["job_interruptions_per_day"] - link_stops / 2)
    assert flaps["link_flap_stall_fraction"] == pytest.approx(link_stops / 2 * 2.0 / 86400)
    assert flaps["by_category_per_day"]["ib-link-flap"] == pytest.approx(stops["by_category_per_day"]["ib-link"] / 2)
    longer = _job(link_flap_share=0.5, link_flap_s=30.0)  # past the retry window: it stops the job after all
    assert longer["job_interruptions_per_day"] == pytest.approx(stops["job_interruptions_per_day"])
    assert flaps["ettr"] > stops["ettr"]


def test_the_spare_quantile_is_scipy_stats_binomial_ppf_and_the_interval_its_lambert_w():
    rng = np.random.default_rng(7)
    nodes = rng.integers(1, 20_000, 3_000).astype(float)
    failure = 10 ** rng.uniform(-6, -0.3, 3_000)
    confidence = rng.choice([0.9, 0.99, 0.999, 0.999999], 3_000)
    assert np.array_equal(binomial_quantile(confidence, nodes, failure), stats.binom.ppf(confidence, nodes, failure))
    checkpoint_s, rate_per_s = 10 ** rng.uniform(-1, 5, 5_000), 10 ** rng.uniform(-9, -1, 5_000)
    mtbf_s = 1 / rate_per_s
    lambert = mtbf_s * (1 + special.lambertw(-np.exp(-1 - checkpoint_s / mtbf_s), 0).real)
    np.testing.assert_allclose(optimal_interval_s(checkpoint_s, rate_per_s), lambert, rtol=1e-12)
    assert optimal_interval_s(0.0, 1e-5) == 0.0 and optimal_interval_s(10.0, 0.0) == np.inf
    # Young's sqrt(2 delta M) is the limit for checkpoints far shorter than the MTBF.
    assert float(optimal_interval_s(1.0, 1e-12)) == pytest.approx(np.sqrt(2 * 1.0 * 1e12), rel=1e-3)


def test_an_nvidia_node_without_nvlink_drops_only_the_nvlink_xid():
    node = {**FF_2ZONE["node"], "nvlink_topology": "none"}
    reliability = evaluate({"cluster": {**FF_2ZONE, "node": node}})["reliability"]
    assert [c["key"] for c in reliability["excluded_categories"]] == ["xid-74"]
    assert "xid-74" not in reliability["by_category_per_day"] and "xid-79" in reliability["by_category_per_day"]
    assert evaluate({"cluster": FF_2ZONE})["reliability"]["excluded_categories"] == []
