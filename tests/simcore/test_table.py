"""simcore.table and to_frame: one row per scenario point, list outputs as list cells, flags as
booleans and counts as integers."""
import copy

import pytest

import simcore
from simcore.outputs import OUTPUTS, value_kind
from simcore.tools.table import LIST_OUTPUTS


def _result(ff_cluster, llama_workload, **cluster):
    return simcore.evaluate({"cluster": {**ff_cluster, **cluster}, "workload": llama_workload})


def test_one_scenario_is_one_row_with_its_list_outputs_as_one_cell(ff_cluster, llama_workload):
    unpriced = copy.deepcopy(ff_cluster)
    unpriced["prices"] = {}
    result = simcore.evaluate({"cluster": unpriced, "workload": llama_workload})
    assert len(result["cost"]["unpriced"]) > 1  # a list of several names, once read as several points
    columns = simcore.table(result)
    assert {len(column) for column in columns.values()} == {1}
    assert columns["cost.unpriced"] == [result["cost"]["unpriced"]]


def test_a_grid_has_a_row_per_point_and_types_its_flags_and_counts(ff_cluster, llama_workload):
    result = _result(ff_cluster, llama_workload, node_count=[64, 128, 1250])
    columns = simcore.table(result)
    assert {len(column) for column in columns.values()} == {3}
    assert columns["cluster.nodes"] == [64, 128, 1250] and all(type(v) is int for v in columns["cluster.nodes"])
    assert columns["fabric.fits"] == [True, True, False] and columns["training.feasible"] == [True, True, False]
    assert [type(v) for v in columns["training.step_time_s"]] == [float, float, type(None)]
    assert columns["cost.unpriced"] == [result["cost"]["unpriced"]] * 3


def test_every_list_output_of_a_result_is_declared_and_every_flag_and_count_is_whole(ff_cluster, llama_workload):
    """A list-valued leaf not in LIST_OUTPUTS would be read as one entry per point; the typed
    outputs hold what their kind says in every preset-like result."""
    result = simcore.evaluate({"cluster": ff_cluster, "workload": llama_workload})

    def lists(tree, prefix=""):
        for key, value in tree.items():
            path = f"{prefix}.{key}" if prefix else key
            if isinstance(value, dict):
                yield from lists(value, path)
            elif isinstance(value, list) and not (value and isinstance(value[0], dict)):
                yield path

    assert set(lists(result)) <= LIST_OUTPUTS
    for output in OUTPUTS:
        value = output.read(result)
        if value_kind(output.path) == "count":
            assert value is None or float(value).is_integer(), output.key
        if value_kind(output.path) == "flag":
            assert isinstance(value, bool), output.key


def test_to_frame_has_one_row_for_one_scenario_with_boolean_flags(ff_cluster, llama_workload):
    pandas = pytest.importorskip("pandas")  # the engine's pandas extra (a dev requirement: CI runs this)

    frame = simcore.to_frame(_result(ff_cluster, llama_workload))
    assert frame.shape[0] == 1
    assert frame["fabric.fits"].dtype == bool and pandas.api.types.is_integer_dtype(frame["cluster.gpus"])
