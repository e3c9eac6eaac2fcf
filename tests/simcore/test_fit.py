"""Constants fitted over the development set (simcore.fitted, simcore.tools.fit): the stored values are
what the fitting script gives, a fitted value reaches the engine and can be overridden, and a fitted
row's band counts its held-out error."""
from dataclasses import replace

import pytest

from simcore import EngineParams, fitted
from simcore.tools import fit
from simcore.tools.references import band_error, scenario, validate

NAME = "deepspeed_v03_host_ops_per_rank"


def test_the_stored_fit_is_what_the_script_gives_within_bounds_with_each_group_left_out():
    entry = next(e for e in fitted.declarations() if e["name"] == NAME)
    again = fit.fit(entry)
    assert again["value"] == pytest.approx(entry["value"], rel=1e-3)
    assert again["fit_mean_abs_error"] == pytest.approx(entry["fit_mean_abs_error"], abs=1e-3)
    low, high = entry["bounds"]
    for group, stored in zip(again["leave_one_group_out"], entry["leave_one_group_out"]):
        assert group["group"] == stored["group"] and low <= group["value"] <= high
        assert group["value"] == pytest.approx(stored["value"], rel=1e-3)
        assert set(group["errors"]) == set(entry["groups"][group["group"]])
    assert again["logo_max_abs_error"] == pytest.approx(
        max(abs(e) for g in again["leave_one_group_out"] for e in g["errors"].values()))


def test_a_fitted_constant_reaches_the_engine_and_a_fit_moves_it_toward_its_rows():
    from simcore.tools.references import run_document

    document = scenario("sc21-t2-174.6b-zero3-1536")
    base = EngineParams()
    assert base.fitted[NAME] == fitted.values()[NAME]
    calls = {ops: float(run_document(document, replace(base, fitted={**base.fitted, NAME: ops}))
                        ["training"]["dp_detail_s"]["fsdp_calls"]) for ops in (1.0, 2.0)}
    assert calls[2.0] > calls[1.0]
    # Fitted on the one row alone, the value sits where that row's error is least (here at the bound).
    row = fit._cases(["sc21-t2-174.6b-zero3-384"])
    alone = fit.best_value(NAME, (1.0, 4.0), row, base)
    assert abs(fit.errors_at(NAME, alone, row, base)[0]) <= abs(fit.errors_at(NAME, 1.0, row, base)[0])


def test_a_fitted_rows_band_error_is_its_held_out_error():
    rows = {row["key"]: row for row in validate()[0]}
    fitted_row = rows["sc21-t2-529.6b-zero3-640"]
    assert fitted_row["fitted"] == [NAME]
    assert fitted_row["held_out_error"] != pytest.approx(fitted_row["error"])
    # A rate's error turned into the step time's, from the held-out error, not the in-fit one.
    assert band_error(fitted_row) == pytest.approx(1 / (1 + fitted_row["held_out_error"]) - 1)
    assert rows["llama-13b-64"]["fitted"] == [] and rows["llama-13b-64"]["held_out_error"] is None
