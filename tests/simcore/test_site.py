"""The site ranking on columns written by hand: each build's best point under the limits, the
order, and the limit named as binding."""
import numpy as np
import pytest

from simcore.tools.site import Site, at_confidence, bands, figures_at, objective, rank_builds, share_within


def columns(**given):
    """Three points of build 0 and two of build 1 (all on two fabric layers), rented at the given
    costs; owning unpriced."""
    size = 5
    base = {"valid": np.ones(size), "invalid_reason": np.full(size, "", dtype=object),
            "training.time_to_train_days": np.array([10.0, 5.0, 2.0, 4.0, 3.0]),
            "training.rent_cost_to_train": np.array([1.0, 2.0, 3.0, 2.5, 4.0]),
            "training.rent_cost_per_million_tokens": np.array([1.0, 2.0, 3.0, 2.5, 4.0]),
            "training.buy_and_run_cost": np.full(size, np.nan),
            "training.cost_per_million_tokens": np.full(size, np.nan),
            "cost.capex_total": np.full(size, np.nan),
            "power.facility_w": np.array([0.8e6, 1.6e6, 2.4e6, 0.8e6, 1.6e6]),
            "power.facility_provisioned_w": np.array([1e6, 2e6, 3e6, 1e6, 2e6]),
            "racks.total_count": np.array([10.0, 20.0, 30.0, 10.0, 20.0]), "racks.within_power_limit": np.ones(size)}
    return {**base, **given}


BUILD = np.array([0, 0, 0, 1, 1])
LAYERS = np.full(5, 2)


def ranked(site, cols=None):
    return {(r["build"], r["ownership"]): r for r in rank_builds(cols or columns(), BUILD, LAYERS, site)}


def test_the_cheapest_point_meeting_every_limit_wins_and_the_deadline_binds_it():
    result = rank_builds(columns(), BUILD, LAYERS, Site(facility_w=2.5e6, floor_racks=100, goal="by_date",
                                                          deadline_days=6))
    assert [(r["build"], r["ownership"], r["point"]) for r in result] == [
        (0, "rented", 1), (1, "rented", 3), (0, "owned", None), (1, "owned", None)]
    assert result[0]["binding"]["limit"] == "deadline"  # point 0 is cheaper but takes 10 days
    assert result[1]["binding"]["limit"] is None  # build 1's cheapest point meets every limit
    assert {r["binding"]["limit"] for r in result[2:]} == {"priced"}


def test_a_build_with_no_point_meeting_every_limit_names_the_limit():
    slow = ranked(Site(facility_w=2.5e6, floor_racks=100, goal="by_date", deadline_days=1))
    assert slow[(0, "rented")]["point"] is None and slow[(0, "rented")]["binding"]["limit"] == "deadline"
    small = ranked(Site(facility_w=0.5e6, floor_racks=100, goal="by_date", deadline_days=6))
    assert small[(1, "rented")]["binding"] == {"limit": "power", "reason": "no valid point meets the site power limit"}
    cramped = ranked(Site(facility_w=9e6, floor_racks=15, goal="by_date", deadline_days=3))
    # Build 0 meets the floor only at point 0 and the deadline only at point 2: never together.
    assert cramped[(0, "rented")]["binding"]["limit"] in ("floor", "deadline")
    assert "never all together" in cramped[(0, "rented")]["binding"]["reason"]
    budget = ranked(Site(facility_w=9e6, floor_racks=100, goal="by_date", deadline_days=6, budget=2.2))
    assert budget[(1, "rented")]["binding"]["limit"] == "budget" and budget[(0, "rented")]["point"] == 1


def test_invalid_points_say_why_and_rack_power_is_a_limit():
    cols = columns(valid=np.array([0.0, 0.0, 0.0, 1.0, 1.0]),
                   invalid_reason=np.array(["needs liquid cooling"] * 3 + ["", ""], dtype=object),
                   **{"racks.within_power_limit": np.array([1.0, 1.0, 1.0, 0.0, 0.0])})
    result = ranked(Site(facility_w=9e6, floor_racks=100, goal="by_date", deadline_days=6), cols)
    assert result[(0, "rented")]["binding"] == {"limit": "valid",
                                               "reason": "no size or layout is valid: needs liquid cooling"}
    assert result[(1, "rented")]["binding"]["limit"] == "rack_power"


def test_the_chance_of_meeting_a_limit_is_the_bands_share_under_it():
    """A band of 80 to 120 days: 100 days is half of it, 90 a quarter; at or past either end, all
    or none; a band of no width is met or not; at 95% confidence the band is held to 118 days."""
    low, high = np.array([80.0, 80.0, 80.0, 80.0, 100.0]), np.array([120.0, 120.0, 120.0, 120.0, 100.0])
    limits = np.array([100.0, 90.0, 130.0, 70.0, 100.0])
    assert share_within(low, high, limits).tolist() == [0.5, 0.25, 1.0, 0.0, 1.0]
    assert np.isnan(share_within(np.array([np.nan]), np.array([np.nan]), 5.0)).all()
    assert at_confidence(80.0, 120.0, 0.95) == pytest.approx(118.0)
    assert at_confidence(80.0, 120.0, 0.5) == pytest.approx(100.0)


def test_planning_at_a_higher_confidence_needs_a_faster_point_and_each_build_has_its_chance():
    """Every point's time band runs from its days / 1.25 to days / 0.8 (errors of -20% to +25%). With
    a 6-day deadline the engine's figures take build 0's 5-day point (its band 4 to 6.25 days: 8/9 of
    it under 6); at 50% confidence too (its middle, 5.125 days); at 95% only its 2-day point (the
    5-day point's 95% is 6.14 days), which costs more."""
    cols = columns(**{"band.low_error": np.full(5, -0.2), "band.high_error": np.full(5, 0.25)})
    site = {"facility_w": 9e6, "floor_racks": 100, "goal": "by_date", "deadline_days": 6}
    figures = ranked(Site(**site), cols)[(0, "rented")]
    assert figures["point"] == 1 and figures["deadline_probability"] == pytest.approx((6 - 4) / (6.25 - 4))
    assert figures["budget_probability"] is None  # no budget
    assert ranked(Site(**site, confidence=0.5), cols)[(0, "rented")]["point"] == 1
    safe = ranked(Site(**site, confidence=0.95), cols)[(0, "rented")]
    assert safe["point"] == 2 and safe["deadline_probability"] == 1.0  # 1.6 to 2.5 days
    assert safe["binding"]["limit"] == "deadline"  # the cheaper points fail the deadline at 95%
    budgeted = ranked(Site(**site, budget=2.2), cols)[(0, "rented")]
    # A rented run pays by the hour: its cost has the time's band, 2 / 1.25 to 2 / 0.8 for point 1's 2.
    assert budgeted["budget_probability"] == pytest.approx((2.2 - 1.6) / (2.5 - 1.6))


def test_an_owned_builds_cost_band_is_its_prices_band_plus_the_energy():
    """Owned: the build's price at its low and at its high (the price book's estimates) plus the run's
    energy; a budget inside that band is met with the share of it under the budget."""
    cols = columns(**{"training.buy_and_run_cost": np.array([11.0, 12.0, 13.0, 12.0, 14.0]),
                      "cost.capex_total": np.full(5, 10.0), "cost.capex_low": np.full(5, 8.0),
                      "cost.capex_high": np.full(5, 14.0)})
    owned = ranked(Site(facility_w=9e6, floor_racks=100, goal="by_date", deadline_days=6, budget=12.0),
                   cols)[(0, "owned")]
    assert owned["point"] == 1  # 12 at its headline: 10 for the build, 2 of energy
    assert owned["budget_probability"] == pytest.approx((12 - 10) / (16 - 10))  # 10 to 16


def test_at_a_confidence_the_days_and_the_cost_are_one_quantile_of_one_band():
    """Issue 70, item 1: planning at 95%, a rented point shown at its band's 95% days (6.14 for the
    5-day point) costs those days' rent (its cost x 6.14 / 5), not the engine's days' rent; an owned
    point adds the energy of those days to its price at the same quantile; the objective ranks the
    same figure; without a confidence, the engine's figures."""
    cols = columns(**{"band.low_error": np.full(5, -0.2), "band.high_error": np.full(5, 0.25),
                      "training.buy_and_run_cost": np.array([11.0, 12.0, 13.0, 12.0, 14.0]),
                      "cost.capex_total": np.full(5, 10.0), "cost.capex_low": np.full(5, 8.0),
                      "cost.capex_high": np.full(5, 14.0)})
    site = Site(facility_w=9e6, floor_racks=100, goal="by_date", deadline_days=6, confidence=0.95)
    days = cols["training.time_to_train_days"]
    rented = figures_at(cols, site, "rented")
    expected_days = days / 1.25 + 0.95 * (days / 0.8 - days / 1.25)
    assert rented["days"] == pytest.approx(expected_days)
    assert rented["cost"] == pytest.approx(cols["training.rent_cost_to_train"] * expected_days / days)
    owned = figures_at(cols, site, "owned")
    energy = cols["training.buy_and_run_cost"] - 10.0
    assert owned["cost"] == pytest.approx(8.0 + 0.95 * 6.0 + energy * expected_days / days)
    assert objective(cols, "by_date", "rented", site) == pytest.approx(rented["cost"])
    assert objective(cols, "by_date", "rented") == pytest.approx(cols["training.rent_cost_to_train"])
    low, high = bands(cols, "rented")["cost"]
    assert (low <= rented["cost"]).all() and (rented["cost"] <= high).all()


def test_the_site_power_limit_holds_the_builds_provisioned_draw_not_their_training_draw():
    """Issue 70, item 4: a site's feed is checked against the builds' compute nodes at their maximum
    (through the PUE), as a site provisions them: build 0's 5-day point draws 1.6 MW training but is
    provisioned at 2 MW, so with a 6-day deadline a 1.8 MW site has no point of it (its 10-day point is
    too slow), and a 2 MW site takes it."""
    tight = ranked(Site(facility_w=1.8e6, floor_racks=100, goal="by_date", deadline_days=6))[(0, "rented")]
    assert tight["point"] is None and tight["binding"]["limit"] in ("power", "deadline")
    assert ranked(Site(facility_w=2.0e6, floor_racks=100, goal="by_date", deadline_days=6))[(0, "rented")]["point"] == 1
