"""Owning against renting: an owned GPU-hour from the capital over its life and the energy, against
the price book's rental price, and the cost to train both ways, checked by hand."""
import copy

import pytest

from simcore import ScenarioError, evaluate
from simcore.formulas.power import HOURS_PER_YEAR
from simcore.tools.references import DGXC_FABRIC, LLAMA3_NODE

PRICES = {"currency": "USD", "node": 375000.0, "switch": 36000.0, "transceiver": 600.0, "endpoint_cable": 900.0,
          "fiber": 20.0, "energy_per_kwh": 0.08, "pue": 1.2, "amortization_years": 4.0, "gpu_hour": 4.86}
CLUSTER = {"node_count": 64, "node": LLAMA3_NODE, "fabric": DGXC_FABRIC, "prices": PRICES,
           "storage": {"external_write_gbyte_s": 2000.0}}  # checkpoints have a cost, so ETTR and days are known
WORKLOAD = {"kind": "transformer", "layers": 32, "hidden": 4096, "heads": 32, "kv_heads": 8, "ffn_hidden": 14336,
            "gated_mlp": True, "vocab": 128256, "seq_len": 8192, "global_batch": 512, "micro_batch": 1, "tp": 2,
            "zero_stage": 1, "recompute": "selective", "sequence_parallel": True, "tokens_to_train": 1e12}


def run(cluster=CLUSTER, workload=WORKLOAD):
    return evaluate({"cluster": copy.deepcopy(cluster), "workload": dict(workload)})


def test_an_owned_gpu_hour_is_its_capital_over_its_life_plus_its_energy():
    result = run()
    cost, power = result["cost"], result["power"]
    gpus = 64 * 8
    by_hand = cost["capex_total"] / (4 * HOURS_PER_YEAR * gpus) + power["facility_w"] / gpus / 1000 * 0.08
    assert cost["own_per_gpu_hour"] == pytest.approx(by_hand)
    assert cost["rent_per_gpu_hour"] == 4.86 and cost["amortization_years"] == 4
    # 46,875 USD of node a GPU over 4 years is 1.34 an hour; the fabric and about 1.2 kW of facility
    # power at 8 cents add a little: under the 3-year cloud commitment.
    assert 1.34 < cost["own_per_gpu_hour"] < 2.0


def test_training_costs_both_ways_over_the_same_days():
    training = run()["training"]
    hours = training["time_to_train_days"] * 24
    assert training["rent_cost_to_train"] == pytest.approx(512 * hours * 4.86)
    assert training["rent_cost_per_million_tokens"] == pytest.approx(training["rent_cost_to_train"] / 1e6)
    own = run()["cost"]["own_per_gpu_hour"]
    assert training["cost_to_train"] == pytest.approx(512 * hours * own)  # the whole cluster trains the job


def test_without_a_rental_price_or_a_complete_bill_there_is_no_comparison():
    unpriced = run({**CLUSTER, "prices": {**PRICES, "gpu_hour": None, "fiber": None}})
    assert unpriced["cost"]["own_per_gpu_hour"] is None and unpriced["cost"]["rent_per_gpu_hour"] is None
    assert unpriced["training"]["rent_cost_to_train"] is None and unpriced["training"]["cost_to_train"] is None


TERMS = {"gpu_hour": 11.06, "gpu_hour_1y": 7.67, "gpu_hour_3y": 4.86}  # GCP a3-highgpu, 2025-03 (on demand, 1y, 3y)


def test_the_run_rents_at_the_cheapest_term_that_covers_its_days_and_says_which():
    result = run({**CLUSTER, "prices": {**PRICES, **TERMS}})
    training, days = result["training"], result["training"]["time_to_train_days"]
    hours = days * 24
    offers = {"on demand": 512 * hours * 11.06, "1-year commitment": 512 * max(days, 365) * 24 * 7.67,
              "3-year commitment": 512 * max(days, 3 * 365) * 24 * 4.86}
    cheapest = min(offers, key=offers.get)
    assert training["rent_term"] == cheapest and training["rent_cost_to_train"] == pytest.approx(offers[cheapest])
    assert training["rent_per_gpu_hour"] == {"on demand": 11.06, "1-year commitment": 7.67,
                                             "3-year commitment": 4.86}[cheapest]
    # The capital's four years are set against the term covering four years: the 3-year one.
    assert result["cost"]["rent_term"] == "3-year commitment" and result["cost"]["rent_per_gpu_hour"] == 4.86
    # A capacity block covers at most 182 days: cheaper per hour, it wins a short run and not a long one.
    blocks = {**PRICES, **TERMS, "gpu_hour_capacity_block": 5.41}
    short = run({**CLUSTER, "prices": blocks})["training"]
    assert short["time_to_train_days"] < 182 and short["rent_term"] == "capacity block"
    long = run({**CLUSTER, "node_count": 4, "prices": blocks}, {**WORKLOAD, "tokens_to_train": 1e13})["training"]
    assert long["time_to_train_days"] > 182 and long["rent_term"] != "capacity block"


def test_the_totals_band_sums_each_parts_low_and_high_and_a_quote_narrows_it():
    bands = {"switch_low": 30000.0, "switch_high": 50000.0, "transceiver_low": 400.0, "transceiver_high": 900.0}
    cost = run({**CLUSTER, "prices": {**PRICES, **bands}})["cost"]
    fabric = run({**CLUSTER, "prices": {**PRICES, **bands}})["fabric"]
    assert cost["capex_low"] == pytest.approx(cost["capex_total"] - fabric["switches"] * 6000
                                              - fabric["transceivers"] * 200)
    assert cost["capex_high"] == pytest.approx(cost["capex_total"] + fabric["switches"] * 14000
                                               + fabric["transceivers"] * 300)
    quoted = run({**CLUSTER, "prices": {**PRICES, **bands, "switch_low": None, "switch_high": None}})["cost"]
    assert cost["capex_low"] < quoted["capex_low"] <= quoted["capex_total"] <= quoted["capex_high"] < cost["capex_high"]
    unpriced = run({**CLUSTER, "prices": {**PRICES, **bands, "fiber": None}})["cost"]
    assert unpriced["capex_low"] is None and unpriced["capex_high"] is None


@pytest.mark.parametrize(("band", "field"), [({"switch_low": 40000.0}, "cluster.prices.switch_low"),
                                             ({"fiber_high": 10.0}, "cluster.prices.fiber_high")])
def test_a_band_that_does_not_hold_its_price_is_refused_naming_the_field(band, field):
    with pytest.raises(ScenarioError) as refused:
        run({**CLUSTER, "prices": {**PRICES, **band}})
    assert refused.value.field == field
