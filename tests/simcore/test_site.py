"""The site ranking on columns written by hand: each build's best point under the limits, the
order, and the limit named as binding."""
import numpy as np

from simcore.tools.site import Site, rank_builds


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
            "cost.capex_total": np.full(size, np.nan), "power.facility_w": np.array([1e6, 2e6, 3e6, 1e6, 2e6]),
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
