"""The scenario document: bad input names the field; arrays broadcast; the CLI."""
import copy
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from simcore import ScenarioError, evaluate
from simcore.document import SPEC, field_docs, fields_markdown
from simcore.tools.references import FF_2ZONE, LLAMA_13B


def document(**workload):
    doc = {"cluster": copy.deepcopy(FF_2ZONE)}
    if workload:
        doc["workload"] = {**LLAMA_13B, **workload}
    return doc


def with_change(path: str, value):
    doc = document(gpus=512)
    node = doc
    *parents, leaf = path.split(".")
    for key in parents:
        node = node.setdefault(key, {})
    node[leaf] = value
    return doc


@pytest.mark.parametrize(
    "path,value,reason",
    [
        ("cluster.node_count", -5, "greater than zero"),
        ("cluster.node_count", 0, "greater than zero"),
        ("cluster.node_count", 10.5, "whole number"),
        ("cluster.node.compute_nic_gbit_s", float("nan"), "finite"),
        ("cluster.node.accelerator.tdp_w", "hot", "number"),
        ("cluster.node.accelerator.tdp_w", [[250, 300]], "flat list"),
        ("cluster.node.accelerator.tdp_w", [], "empty list"),
        ("cluster.node.accelerator.tdp_w", True, "number"),
        ("cluster.fabric.storage_network", "wifi", "must be one of"),
        ("cluster.fabric.colour", "blue", "unknown field"),
        ("cluster.node.accelerator.peak_fp16_tflops", None, "may not be null"),
        ("workload.zero_stage", 4, "at most 3"),
        ("workload.recompute", "yes", "must be one of none, selective, full"),
            ("workload.flash_attention", "yes", "true or false"),
        ("workload.tp", 0, "greater than zero"),
        ("options.monte_carlo_replicas", 10**7, "at most"),
        ("extra", {}, "unknown field"),
    ],
)
def test_bad_input_raises_an_error_naming_the_field(path, value, reason):
    with pytest.raises(ScenarioError) as raised:
        evaluate(with_change(path, value))
    assert raised.value.field == path
    assert reason in raised.value.reason


def test_missing_required_fields_are_named():
    doc = document()
    del doc["cluster"]["node"]["gpus"]
    with pytest.raises(ScenarioError, match="cluster.node.gpus: is required"):
        evaluate(doc)
    with pytest.raises(ScenarioError, match="cluster: is required"):
        evaluate({})
    with pytest.raises(ScenarioError, match="workload.layers: is required for a transformer"):
        evaluate({**document(), "workload": {"global_batch": 8}})


def test_lists_of_different_lengths_are_refused():
    doc = document()
    doc["cluster"]["node_count"] = [100, 200, 300]
    doc["cluster"]["fabric"]["switch_radix"] = [40, 64]
    with pytest.raises(ScenarioError) as raised:
        evaluate(doc)
    assert raised.value.field == "cluster.fabric.switch_radix"
    assert "has 2 values but cluster.node_count has 3" in str(raised.value)


def test_lists_broadcast_into_many_scenario_points():
    doc = document(gpus=[64, 128, 256, 512])
    doc["cluster"]["node_count"] = [1240, 1240, 1240, 1240]
    result = evaluate(doc)
    steps = result["training"]["step_time_s"]
    assert len(steps) == 4 and steps == sorted(steps, reverse=True)
    single = evaluate(document(gpus=128))["training"]["step_time_s"]
    assert steps[1] == pytest.approx(single)


def test_result_carries_engine_version_and_json_safe_values():
    result = evaluate(document(gpus=512))
    assert result["engine_version"]
    json.dumps(result, allow_nan=False)


def test_every_field_is_documented_in_docs():
    """docs/scenario-format.md carries the current output of ``python -m simcore fields``."""
    text = Path("docs/scenario-format.md").read_text(encoding="utf-8")
    assert fields_markdown() in text
    for path, *_ in field_docs():
        assert f"`{path}`" in text, path
    assert set(SPEC) == {"cluster", "workload", "options"}


def run_cli(*args, stdin=None):
    return subprocess.run([sys.executable, "-m", "simcore", *args], input=stdin, capture_output=True, text=True,
                          timeout=120)


def test_cli_evaluates_a_file_and_stdin(tmp_path):
    path = tmp_path / "scenario.json"
    path.write_text(json.dumps(document(gpus=64)))
    from_file = run_cli("evaluate", str(path))
    assert from_file.returncode == 0, from_file.stderr
    result = json.loads(from_file.stdout)
    assert result["fabric"]["switches"] == 122
    from_stdin = run_cli("evaluate", "-", stdin=path.read_text())
    assert json.loads(from_stdin.stdout) == result


def test_cli_reports_bad_input_and_exits_non_zero(tmp_path):
    bad = run_cli("evaluate", "-", stdin=json.dumps(with_change("cluster.node_count", -1)))
    assert bad.returncode == 2
    assert "cluster.node_count: must be greater than zero" in bad.stderr
    assert bad.stdout == ""
    assert run_cli("evaluate", "-", stdin="{not json").returncode == 2
    assert run_cli("evaluate", str(tmp_path / "missing.json")).returncode == 2


def test_cli_validate_and_bench():
    validate = run_cli("validate", "--json")
    assert validate.returncode == 0
    report = json.loads(validate.stdout)
    assert {"cases", "summary", "family_constants", "fitted_constants", "unexpected_failures",
            "known_misses_now_passing"} == set(report)
    assert report["unexpected_failures"] == report["known_misses_now_passing"] == []
    assert {(row["family"], row["constant"]) for row in report["family_constants"]} >= {
        ("ampere", "gemm_fraction"), ("hopper", "fp8_gemm_fraction"), ("ascend", "gemm_fraction"),
        ("x86 host", "host_op_us"), ("MoE router", "kernels (fused)")}
    assert all(row["source"] and row["confidence"] for row in report["family_constants"])
    text = run_cli("validate").stdout
    assert "dgx-3layer-switches" in text and "mean |err|" in text and "(calibration point)" in text
    assert "ampere     gemm_fraction" in text
    # A fitted constant's rows say so with their held-out error, and the constant its leave-one-group-out error.
    assert "(fitted on; held out" in text and "deepspeed_v03_host_ops_per_rank = " in text
    assert "leave-one-group-out max |error|" in text
    bench = run_cli("bench", "--points", "2000", "--replicas", "10")
    assert bench.returncode == 0
    assert "points/s" in bench.stdout and "GPU-years/s" in bench.stdout
    assert "layouts: 2,000 points varying TP, PP" in bench.stdout and "by kind of grid" in bench.stdout


def test_validate_exits_non_zero_for_a_failure_not_listed_as_a_known_miss(monkeypatch, capsys):
    """CI can gate on ``simcore validate``: a failing case not among the known misses, or a known
    miss that now passes (a stale list), exits 1 and is named; ``--known-misses`` says why each is."""
    from simcore.__main__ import main
    from simcore.tools import references

    assert main(["validate"]) == 0
    assert "of 159 cases fail their criterion" in capsys.readouterr().out
    misses = dict(references.KNOWN_MISSES)
    monkeypatch.setattr(references, "KNOWN_MISSES", {k: v for k, v in misses.items() if k != "deepseek-v3-h800-2048"})
    assert main(["validate"]) == 1
    assert "unexpected failure: deepseek-v3-h800-2048" in capsys.readouterr().out
    monkeypatch.setattr(references, "KNOWN_MISSES", {**misses, "dgx-3layer-switches": "not a miss"})
    assert main(["validate", "--json"]) == 1
    assert json.loads(capsys.readouterr().out)["known_misses_now_passing"] == ["dgx-3layer-switches"]
    assert main(["validate", "--known-misses"]) == 0
    assert "dgx-3layer-switches: not a miss" in capsys.readouterr().out


def test_the_command_says_its_name_and_version():
    import simcore

    version = run_cli("--version")
    assert version.returncode == 0 and version.stdout.strip() == f"simcore {simcore.__version__}"
    assert run_cli("--help").stdout.startswith("usage: simcore ")


def test_numpy_inputs_are_accepted_directly():
    doc = document()
    doc["cluster"]["node_count"] = np.array([600, 1200])
    assert evaluate(doc)["fabric"]["switches"] == [2 * (24 + 12) + 2, 2 * (39 + 20) + 2]


OMITTED = object()


@pytest.mark.parametrize("changes,message", [
    ({"workload.pipeline_schedule": "dualpipe", "workload.pp": 5},
     "workload.pp: DualPipe needs an even PP of at least 2"),
    ({"workload.first_stage_layers": 30, "workload.last_stage_layers": 9, "workload.pp": 4},
     "workload.first_stage_layers: the first and last stages' layers must leave a whole number"),
    ({"cluster.node.accelerator.family": OMITTED}, "cluster.node.accelerator.family: is required"),
])
def test_cli_names_the_field_of_a_schedule_or_an_accelerator_it_refuses(changes, message):
    doc = document(gpus=512)
    for path, value in changes.items():
        node = doc
        *parents, leaf = path.split(".")
        for key in parents:
            node = node[key]
        if value is OMITTED:
            del node[leaf]
        else:
            node[leaf] = value
    refused = run_cli("evaluate", "-", stdin=json.dumps(doc))
    assert refused.returncode == 2 and message in refused.stderr, refused.stderr


def test_a_reader_that_stops_early_gets_no_traceback(ff_cluster):
    """``python -m simcore evaluate grid.json | head -1``: the closed pipe ends the command quietly
    (the grid's result is megabytes, far more than a pipe holds, so the write meets the closed end)."""
    grid = {"cluster": {**ff_cluster, "node_count": list(range(100, 20_100))}}
    process = subprocess.Popen([sys.executable, "-m", "simcore", "evaluate", "-"], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    process.stdin.write(json.dumps(grid))
    process.stdin.close()
    assert process.stdout.readline() == "{\n"
    process.stdout.close()
    stderr = process.stderr.read()
    process.stderr.close()
    assert process.wait(timeout=120) == 1 and "Traceback" not in stderr and "BrokenPipe" not in stderr


def test_counts_come_out_as_integers():
    """GPUs, nodes, switches and racks are whole things: the result writes them as integers (they
    came out as 200.0), one point or many; other figures stay numbers."""
    one = evaluate(document(gpus=64))
    assert [type(value) for value in (one["cluster"]["nodes"], one["cluster"]["gpus"], one["fabric"]["switches"],
                                      one["racks"]["count"])] == [int] * 4
    assert type(one["training"]["step_time_s"]) is float
    many = evaluate(with_change("cluster.node_count", [100, 200]))
    assert many["cluster"]["nodes"] == [100, 200] and all(type(n) is int for n in many["cluster"]["nodes"])
