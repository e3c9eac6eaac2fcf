"""Sweep grids and goal seeking, checked against brute force."""
import itertools

import numpy as np
import pytest

from simcore import ScenarioError, evaluate
from simcore.tools.references import FF_2ZONE, LLAMA_13B
from simcore.tools.sweep import (
    axis_indices,
    evaluate_points,
    goal_seek,
    goal_spec,
    grid_size,
    pareto_front,
    parse_axis,
    parse_goal,
)

# Fire-Flyer without its 3FS nodes, which the relative price book does not price: a complete bill.
FF_PRICED = {**FF_2ZONE, "storage": {**FF_2ZONE["storage"], "nodes": 0}}


def test_axis_forms():
    assert parse_axis("a", [1, 2, 4]).values.tolist() == [1, 2, 4]
    assert parse_axis("a", {"start": 0, "stop": 1, "steps": 5}).values.tolist() == [0, 0.25, 0.5, 0.75, 1]
    assert parse_axis("a", {"start": 100, "stop": 1000, "step": 300}).values.tolist() == [100, 400, 700, 1000]
    assert parse_axis("plan.switch", ["qm8700", "qm9700"]).categorical


@pytest.mark.parametrize("spec,field,words", [
    ([], "axes.a", "non-empty"),
    ({"values": []}, "axes.a", "non-empty"),
    ({"start": 0, "stop": 10, "steps": 0}, "axes.a.steps", "at least 1"),
    ({"start": 0, "stop": 10, "step": 0}, "axes.a.step", "greater than zero"),
    ({"start": 10, "stop": 0, "step": 1}, "axes.a", "range is empty"),
    ({"start": 0, "stop": 10}, "axes.a", "exactly one of steps or step"),
    ({"start": 0, "stop": 1e9, "step": 1}, "axes.a", "at most 100,000"),
    ({"from": 1}, "axes.a.from", "unknown field"),
    ([1, "x"], "axes.a", "all numbers or all names"),
    ([1, float("nan")], "axes.a", "finite"),
])
def test_bad_axes_name_the_field(spec, field, words):
    with pytest.raises(ScenarioError) as raised:
        parse_axis("a", spec)
    assert raised.value.field == field and words in raised.value.reason


def test_grid_order_is_row_major():
    axes = [parse_axis("a", [1, 2]), parse_axis("b", [10, 20, 30])]
    assert grid_size(axes) == 6
    a, b = axis_indices(axes, 0, 6)
    assert list(zip(a, b)) == list(itertools.product(range(2), range(3)))


def test_pareto_front_matches_brute_force():
    rng = np.random.default_rng(4)
    x, y = rng.integers(0, 20, 300).astype(float), rng.integers(0, 20, 300).astype(float)
    ok = rng.random(300) > 0.2
    front = set(pareto_front(x, y, ok).tolist())
    brute = {i for i in np.flatnonzero(ok) if not any(
        ok[j] and x[j] <= x[i] and y[j] <= y[i] and (x[j] < x[i] or y[j] < y[i]) for j in range(300))}
    # Duplicates of a front point are dominated by neither; the front keeps the first of each.
    assert front <= brute and {(x[i], y[i]) for i in front} == {(x[i], y[i]) for i in brute}


def small_grid():
    base = {"cluster": FF_PRICED, "workload": dict(LLAMA_13B)}
    axes = [parse_axis("cluster.node_count", [100, 200, 400, 800, 1240]),
            parse_axis("workload.gpus", [64, 128, 256, 512, 1024]),
            parse_axis("workload.tp", [1, 2, 4])]
    outputs = ["cost.capex_total", "training.step_time_s", "training.mfu", "training.tokens_per_s", "power.it_total_w",
               "cost.unpriced_count"]
    idx = axis_indices(axes, 0, grid_size(axes))
    return base, axes, outputs, evaluate_points(base, axes, idx, outputs)


def test_goal_seek_optimum_and_front_are_exactly_the_brute_force_ones():
    base, axes, outputs, columns = small_grid()
    goal = parse_goal({"minimize": "cost.capex_total",
                       "constraints": [{"metric": "training.step_time_s", "max": 40}],
                       "pareto": [["cost.capex_total", "training.step_time_s"]]})
    outcome = goal_seek(columns, goal)
    brute = []
    for point, values in enumerate(itertools.product(*[a.values for a in axes])):
        doc = {"cluster": {**FF_PRICED, "node_count": values[0]},
               "workload": {**LLAMA_13B, "gpus": values[1], "tp": values[2]}}
        result = evaluate(doc)
        training = result["training"]
        if result["fabric"]["fits"] and training["feasible"]:
            brute.append((point, result["cost"]["capex_total"], training["step_time_s"]))
    feasible = [b for b in brute if b[2] <= 40]
    assert outcome["feasible"] == len(feasible)
    best = min(feasible, key=lambda b: (b[1], b[0]))
    assert outcome["optimum"] == best[0]
    front = [b for b in feasible if not any(o[1] <= b[1] and o[2] <= b[2] and (o[1] < b[1] or o[2] < b[2])
                                            for o in feasible)]
    front_values = sorted({(b[1], b[2]) for b in front})
    got = sorted({(columns["cost.capex_total"][i], columns["training.step_time_s"][i])
                  for i in outcome["pareto"][0]["points"]})
    assert np.allclose(got, front_values)
    assert outcome["rejected_by"]["invalid"] == 75 - len(brute)


def test_pareto_directions_per_axis_match_brute_force():
    _, _, _, columns = small_grid()
    power, tokens = columns["power.it_total_w"], columns["training.tokens_per_s"]
    # Senses left out: power minimised, tokens/s (higher is better in the registry) maximised.
    short = parse_goal({"minimize": "cost.capex_total", "pareto": [["power.it_total_w", "training.tokens_per_s"]]})
    assert (short.pareto[0].x_sense, short.pareto[0].y_sense) == ("min", "max")
    # Stored with its senses filled in, the goal reads back as the same goal.
    assert parse_goal(goal_spec(short)) == short
    assert goal_spec(short)["pareto"] == [{"x": "power.it_total_w", "y": "training.tokens_per_s",
                                          "x_sense": "min", "y_sense": "max"}]
    explicit = {"x": "power.it_total_w", "y": "training.tokens_per_s", "x_sense": "min", "y_sense": "max"}
    outcome = goal_seek(columns, parse_goal({"minimize": "cost.capex_total", "pareto": [explicit]}))
    front = outcome["pareto"][0]
    assert (front["x_sense"], front["y_sense"]) == ("min", "max")
    ok = np.flatnonzero(columns["valid"].astype(bool) & (columns["cost.unpriced_count"] == 0))
    brute = {(power[i], tokens[i]) for i in ok if not any(
        power[j] <= power[i] and tokens[j] >= tokens[i] and (power[j] < power[i] or tokens[j] > tokens[i]) for j in ok)}
    assert len(brute) > 1
    assert {(power[i], tokens[i]) for i in front["points"]} == brute
    # Both minimised, the front is another set of points.
    both_min = goal_seek(columns, parse_goal({"minimize": "cost.capex_total", "pareto": [
        {**explicit, "y_sense": "min"}]}))["pareto"][0]["points"]
    assert set(both_min) != set(front["points"])


def test_an_infeasible_goal_says_which_constraint_bound():
    _, _, _, columns = small_grid()
    goal = parse_goal({"minimize": "cost.capex_total",
                       "constraints": [{"metric": "training.step_time_s", "max": 1.0},
                                       {"metric": "power.it_total_w", "max": 5e7}]})
    outcome = goal_seek(columns, goal)
    assert outcome["optimum"] is None
    assert outcome["binding"]["constraint"] == "training.step_time_s <= 1"
    assert outcome["binding"]["best_value"] == pytest.approx(np.nanmin(
        columns["training.step_time_s"][columns["valid"] == 1]))
    # High MFU needs few GPUs, a short step many: each is met somewhere, never both.
    valid = columns["valid"] == 1
    short = valid & (columns["training.step_time_s"] <= 20)
    best_mfu_when_short = float(np.nanmax(columns["training.mfu"][short]))
    assert np.nanmax(columns["training.mfu"][valid]) > best_mfu_when_short
    together = parse_goal({"maximize": "cost.capex_total",
                           "constraints": [{"metric": "training.step_time_s", "max": 20},
                                           {"metric": "training.mfu", "min": best_mfu_when_short * 1.001}]})
    joint = goal_seek(columns, together)
    assert joint["optimum"] is None and "never all together" in joint["binding"]["reason"]


@pytest.mark.parametrize("spec,field", [
    ({"minimize": "a", "maximize": "b"}, "goal"),
    ({}, "goal"),
    ({"minimize": "a", "constraints": [{"metric": "b"}]}, "goal.constraints.0"),
    ({"minimize": "a", "constraints": [{"metric": "b", "max": "low"}]}, "goal.constraints.0.max"),
    ({"minimize": "a", "pareto": [["a"]]}, "goal.pareto.0"),
    ({"minimize": "a", "target": 1}, "goal.target"),
    ({"minimize": "a", "pareto": [{"x": "a", "y": "b", "y_sense": "up"}]}, "goal.pareto.0.y_sense"),
    ({"minimize": "a", "pareto": [{"x": "a"}]}, "goal.pareto.0.y"),
    ({"minimize": "a", "pareto": [{"x": "a", "y": "b", "z": "c"}]}, "goal.pareto.0.z"),
])
def test_bad_goals_name_the_field(spec, field):
    with pytest.raises(ScenarioError) as raised:
        parse_goal(spec)
    assert raised.value.field == field


def test_a_cost_goal_refuses_points_whose_bill_has_an_unpriced_part():
    _, _, _, columns = small_grid()
    valid = columns["valid"] == 1
    unpriced = {**columns, "cost.unpriced_count": np.where(np.arange(valid.size) % 2, 1.0, 0.0),
                "cost.capex_total": np.where(np.arange(valid.size) % 2, np.nan, columns["cost.capex_total"])}
    outcome = goal_seek(unpriced, parse_goal({"minimize": "cost.capex_total"}))
    assert outcome["feasible"] == int((valid & (np.arange(valid.size) % 2 == 0)).sum())
    assert outcome["rejected_by"]["cost.unpriced_count <= 0"] == int((valid & (np.arange(valid.size) % 2 == 1)).sum())
    # A goal with no price in it keeps them.
    assert goal_seek(unpriced, parse_goal({"minimize": "training.step_time_s"}))["feasible"] == int(valid.sum())
