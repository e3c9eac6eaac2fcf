"""Reliability: the Xid generator, Monte Carlo ETTR against the closed form, intervals, spares."""
import numpy as np
import pytest
from scipy import stats

from simcore import evaluate
from simcore.references import FF_2ZONE, LLAMA_13B
from simcore.reliability import (
    FF_XID_COUNTS,
    XID_CLASSES,
    daly_interval_s,
    ettr_closed_form,
    ettr_monte_carlo,
    fire_flyer_categories,
    node_availability,
    optimal_interval_s,
    sample_category_counts,
    spares_needed,
    young_interval_s,
)


def test_xid_generator_reproduces_the_yearly_mix():
    categories = fire_flyer_categories()
    keys = [c.key for c in categories]
    counts = sample_category_counts(categories, 10_000, 1_250, 8760, replicas=1,
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
    counts = sample_category_counts(categories, 10_000, 1_250, 8760, replicas=400, rng=np.random.default_rng(7))
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


def test_scenario_reliability_for_a_job():
    result = evaluate({"cluster": FF_2ZONE, "workload": {**LLAMA_13B, "gpus": 512},
                       "options": {"monte_carlo_replicas": 50, "seed": 5}})
    rel = result["reliability"]
    expected_rate = sum(c.rate_per_unit_hour * (512 if c.unit == "gpu" else 64)
                        for c in fire_flyer_categories() if c.interrupts_job)
    assert not next(c for c in fire_flyer_categories() if c.key == "xid-45").interrupts_job
    assert rel["job_interruptions_per_day"] == pytest.approx(expected_rate * 24)
    assert rel["checkpoint_interval_s"] == rel["optimal_interval_s"]
    assert rel["ettr"] == rel["ettr_at_optimum"]
    assert rel["restart_time_s"] == pytest.approx(60 + 0.15 * 512)
    assert rel["monte_carlo"]["ettr_mean"] == pytest.approx(rel["ettr"], abs=0.01)
    assert rel["spare_nodes"] >= 1


def test_per_node_rate_profile():
    cluster = {**FF_2ZONE, "reliability": {"profile": "per-node-rate", "failures_per_1000_node_days": 6.5}}
    rel = evaluate({"cluster": cluster})["reliability"]
    assert rel["cluster_interruptions_per_day"] == pytest.approx(6.5 / 1000 * 1240)


def test_monte_carlo_of_a_segment_that_never_completes_gives_zero_not_an_error():
    ettr = ettr_monte_carlo(np.array([3600.0, 1e9]), 60.0, 600.0, 1 / 3600, segments=10, replicas=5,
                            rng=np.random.default_rng(0))
    assert ettr.shape == (5, 2)
    assert np.all(ettr[:, 1] == 0) and np.all(ettr[:, 0] > 0)
