"""Reading profiler traces (simcore.tools.trace): Kineto's Chrome-trace JSON, written here in the
shape the PyTorch profiler gives a GPU run (one process per device, one thread per CUDA stream,
kernel events in microseconds), gzip or not, split on the timeline into where the span goes."""
import gzip
import json
import re

import numpy as np
import pytest

from simcore.errors import ScenarioError
from simcore.tools import trace as t

pytest.importorskip("ijson")  # the engine's trace extra (a dev requirement: CI runs these)

GEMM = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_cublas"
ATTENTION = "void flash::compute_attn_ws<Flash_fwd_kernel_traits<128, 128, 128>>(flash::Params)"
CAST = "void cuda::per_token_cast_to_fp8_with_channels<__nv_bfloat16, 128>(__nv_bfloat16 const*)"
NORM = "void layer_norm::ln_fwd_kernel<layer_norm::Kernel_traits<__nv_bfloat16>>(layer_norm::FwdParams)"
COMBINE = "void dpsk::ep::internode::combine<false, 8, __nv_bfloat16>(int4*, float*)"
ALLREDUCE = "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevComm*, unsigned long, ncclWork*)"


def kernel(name, stream, start, dur, pid=0, cat="kernel"):
    return {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": stream, "ts": start, "dur": dur,
            "args": {"device": pid, "stream": stream}}


def write(path, events, rank=None, compress=False):
    document = {"schemaVersion": 1,
                "deviceProperties": [{"id": 0, "name": "NVIDIA H800", "numSms": 132}],
                **({"distributedInfo": {"backend": "nccl", "rank": rank, "world_size": 64}}
                   if rank is not None else {}),
                "traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1234, "tid": 1234,
                                 "ts": 0, "dur": 5}, *events],
                "traceName": str(path)}
    data = json.dumps(document).encode()
    path.write_bytes(gzip.compress(data) if compress else data)
    return path


# A 100-us step on one GPU: a GEMM 0-40 on stream 7 beside a DeepEP combine 30-60 on stream 27, a cast
# 40-50, attention 60-80 beside an NCCL all-reduce 70-95, a norm 82-85, a memset 96-97 and nothing 97-100.
STEP = [kernel(GEMM, 7, 0, 40), kernel(COMBINE, 27, 30, 30), kernel(CAST, 7, 40, 10), kernel(ATTENTION, 7, 60, 20),
        kernel(ALLREDUCE, 27, 70, 25), kernel(NORM, 7, 82, 3), kernel("Memset (Device)", 7, 96, 1, cat="gpu_memset"),
        kernel("idle marker", 7, 99, 1)]


@pytest.mark.parametrize("compress", [False, True])
def test_a_step_splits_on_the_timeline_into_parts_that_add_up_to_its_span(tmp_path, compress):
    read = t.read_trace(write(tmp_path / "step.json", STEP, compress=compress))
    assert read.start_us.size == 8 and read.devices[0]["numSms"] == 132  # the CPU op is not a GPU event
    split = t.timeline(read)
    assert split["span_us"] == [100.0]
    parts = {name: values[0] for name, values in split["parts_us"].items()}
    # GEMM 0-40; cast 40-50; combine alone 50-60; attention 60-80; all-reduce alone 80-82, 85-95; norm 82-85;
    # the memset 96-97; the last marker (other compute) 99-100; idle 95-96 and 97-99.
    assert parts == {"gemm": 40, "attention": 20, "quantize": 10, "other_compute": 3 + 1, "communication": 10 + 2 + 10,
                     "memory": 1, "idle": 1 + 2}
    assert sum(parts.values()) == split["span_us"][0]
    assert split["busy_us"]["communication"] == [55.0]
    assert split["overlapped_communication_us"] == [10 + 10 + 10 + 3.0]  # under the GEMM, cast, attention, norm
    streams = {s["stream"]: s["busy_us"] for s in split["streams"]}
    assert streams[27] == {**dict.fromkeys(t.PARTS, 0.0), "communication": 55.0}


def test_each_kernel_name_goes_to_its_class():
    assert [t.PARTS[t.classify(name, "kernel")] for name in (GEMM, ATTENTION, CAST, NORM, COMBINE, ALLREDUCE)] == [
        "gemm", "attention", "quantize", "other_compute", "communication", "communication"]
    grouped = "void cutlass::device_kernel<dpsk::grouped_gemm::cuda::fp8_ptp128c::GemmKernel>(Params)"
    flash_bwd = "void cutlass::device_kernel<flash::FlashAttnBwd<flash::CollectiveMainloopBwd<2>>>(Params)"
    layout = "void dpsk::grouped_gemm::cuda::utils::transpose<512, 128, 4, 4>(unsigned char const*)"
    assert [t.PARTS[t.classify(name, "kernel")] for name in (grouped, flash_bwd, layout)] == [
        "gemm", "attention", "quantize"]
    assert t.PARTS[t.classify("Memcpy HtoD (Pinned -> Device)", "gpu_memcpy")] == "memory"


def test_ranks_are_kept_apart_and_a_window_cuts_the_events_at_its_edges(tmp_path):
    second = [{**event, "pid": 1, "ts": event["ts"] + 1000} for event in STEP]
    read = t.read_trace(write(tmp_path / "two.json", STEP + second))
    split = t.timeline(read)
    assert split["ranks"] == [0, 1] and split["span_us"] == [100.0, 100.0]  # no stretch between the two counts
    assert split["parts_us"]["gemm"] == [40.0, 40.0]
    windowed = t.timeline(read, window_us=(20.0, 65.0))
    assert windowed["ranks"] == [0] and windowed["span_us"] == [45.0]
    assert windowed["parts_us"]["gemm"] == [20.0] and windowed["parts_us"]["attention"] == [5.0]
    with pytest.raises(ScenarioError, match="no GPU event inside the window"):
        t.timeline(read, window_us=(300.0, 400.0))
    ranked = t.read_trace(write(tmp_path / "rank5.json", STEP, rank=5))
    assert np.unique(ranked.rank).tolist() == [5] and ranked.distributed["world_size"] == 64


def stepped(steps: dict[int, float], first_us: float = 1000.0, scale: float = 1.0) -> list[dict]:
    """The PyTorch profiler's shape of several steps: each a CPU ``ProfilerStep#N`` annotation whose
    kernels' launches (CUDA runtime events) carry the correlation id their kernels do, the GPU running
    each step's kernels (STEP times ``scale``, stretched by the step's factor) after their launches."""
    events, correlation, cpu_us = [], 0, first_us
    for number, stretch in steps.items():
        events.append({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{number}", "pid": 1234,
                       "tid": 1234, "ts": cpu_us, "dur": 50.0})
        gpu_us = cpu_us + 20.0
        for i, kernel_event in enumerate(STEP):
            correlation += 1
            events.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1234, "tid": 1234,
                           "ts": cpu_us + i, "dur": 1.0, "args": {"correlation": correlation}})
            events.append({**kernel_event, "ts": gpu_us + kernel_event["ts"] * stretch * scale,
                           "dur": kernel_event["dur"] * stretch * scale,
                           "args": {**kernel_event["args"], "correlation": correlation}})
        cpu_us += 500.0 * scale
    return events


def test_marked_profiler_steps_split_apart_and_spread_the_parts_over_steps(tmp_path, capsys):
    """Two steps, the second 1.5 times as long in every kernel: each kernel goes to the step its
    launch fell in, each step is split on its own timeline, and the stored rows are the mean step with
    the fastest and slowest; a kernel launched outside every step is in no step's split."""
    events = stepped({3: 1.0, 4: 1.5})
    events.append(kernel(GEMM, 7, 5000, 400))  # launched (correlation) nowhere: in no step
    read = t.read_trace(write(tmp_path / "steps.json", events))
    assert read.steps == [3, 4] and (read.step == -1).sum() == 1
    split = t.timeline(read, by_step=True)
    assert split["ranks"] == [[0, 3], [0, 4]] and split["span_us"] == [100.0, 150.0]
    assert split["parts_us"]["gemm"] == [40.0, 60.0]
    rows, facts = t.trace_rows(tmp_path / "steps.json")
    gemm = next(row for row in rows if row["part"] == "gemm")
    assert (gemm["traced_us"], gemm["low_us"], gemm["high_us"]) == (50.0, 40.0, 60.0)
    assert facts["steps"] == [3, 4] and facts["ranks"] == [0] and facts["span_us"] == 125.0
    assert t.timeline(read)["span_us"] == [5400.0 - 1020.0]  # without steps: the whole trace, the stray GEMM too
    from simcore.__main__ import main

    assert main(["trace", str(tmp_path / "steps.json")]) == 0
    printed = capsys.readouterr().out
    assert "profiler steps 3 to 4 marked" in printed and "rank 0, step 4: 0.15 ms traced" in printed
    refused = [{**event, "args": {}} if event["cat"] in t.GPU_CATEGORIES else event for event in stepped({1: 1.0})]
    with pytest.raises(ScenarioError, match="no GPU event was launched inside a marked profiler step"):
        t.trace_rows(write(tmp_path / "unlinked.json", refused))


def test_what_is_no_trace_or_too_large_is_refused_naming_why(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"traceEvents": [{"ph": "X", "cat": "kernel",')
    with pytest.raises(ScenarioError, match="not JSON a trace reader can read"):
        t.read_trace(bad)
    with pytest.raises(ScenarioError, match="no GPU events"):
        t.read_trace(write(tmp_path / "cpu.json", []))
    with pytest.raises(ScenarioError, match="over 3 GPU events"):
        t.read_trace(write(tmp_path / "many.json", STEP), max_events=3)
    with pytest.raises(ScenarioError, match="over 100,000 bytes of JSON"):  # gzip counts what it unpacks to
        t.read_trace(write(tmp_path / "big.json.gz", STEP * 1000, compress=True), max_bytes=100_000)
    kernels = t.read_trace(write(tmp_path / "names.json", STEP)).kernel_names
    assert list(kernels)[0] == GEMM and kernels[ALLREDUCE] == (t.PARTS.index("communication"), 1, 25.0)


def test_the_command_line_prints_each_ranks_split_and_refuses_a_bad_file(tmp_path, capsys):
    from simcore.__main__ import main

    path = write(tmp_path / "step.json.gz", STEP, rank=3, compress=True)
    assert main(["trace", str(path)]) == 0
    out = capsys.readouterr().out
    assert "8 GPU events, NVIDIA H800" in out and "rank 3: 0.10 ms traced" in out
    assert re.search(r"GEMMs\s+0\.04 ms\s+40\.0%", out) and re.search(r"exposed communication\s+0\.02 ms\s+22\.0%", out)
    assert main(["trace", str(path), "--json", "--window-us", "0", "50"]) == 0
    assert json.loads(capsys.readouterr().out)["parts_us"]["quantize"] == [10.0]
    (tmp_path / "empty.json").write_text('{"traceEvents": []}')
    assert main(["trace", str(tmp_path / "empty.json")]) == 2
    assert "error: file: no GPU events" in capsys.readouterr().err


def _llama_document(**workload):
    from simcore.tools.references import DGXC_FABRIC, DGXC_LLAMA_70B, LLAMA3_NODE

    return {"cluster": {"node_count": 8, "node": LLAMA3_NODE, "fabric": DGXC_FABRIC, "prices": {"currency": "REL"}},
            "workload": {**DGXC_LLAMA_70B, "gpus": 64, "global_batch": 8, "precision": "bf16", "pp": 1, "cp": 1,
                         "virtual_stages": 1, "tp": 8, "tp_comm_overlap": False, **workload}}


def test_the_prediction_beside_a_trace_is_the_layer_models_compute_by_class():
    from simcore import evaluate

    document = _llama_document()
    one, four = t.predicted_split(document, dense_layers=1), t.predicted_split(document, dense_layers=4)
    assert set(one) == set(t.COMPUTE) and all(four[name] == pytest.approx(4 * one[name]) for name in one)
    assert one["gemm"] > one["attention"] > 0 and one["quantize"] == 0  # BF16: nothing cast
    assert t.predicted_split(_llama_document(precision="fp8"), dense_layers=1)["quantize"] > 0
    # Every layer of the one micro-batch a rank runs: the step's forward and backward, less the output
    # layer, the loss and the embedding, which are no layer's.
    training = evaluate(document)["training"]
    step = training["step_parts_s"]["forward"] + training["step_parts_s"]["backward"]
    layers = sum(t.predicted_split(document, dense_layers=80).values()) / 1e6
    assert 0.9 * step < layers < step
    with pytest.raises(ScenarioError, match="a transformer workload"):
        t.predicted_split({**document, "workload": {"kind": "cnn", "params": 1e8, "flops_per_sample_forward": 1e10,
                                                     "global_batch": 64, "gpus": 64}}, dense_layers=1)


def test_the_exposed_communication_beside_a_trace_is_the_steps_spread_over_its_layers_and_micro_batches():
    """The step's exposed TP, CP, PP and EP traffic over its micro-batches and a stage's layers, times
    the layers traced; nothing for a plan that cannot run the workload."""
    from simcore import evaluate

    document = _llama_document()
    training = evaluate(document)["training"]
    exposed_s = sum(training["step_parts_s"][part] for part in t.LAYER_COMMUNICATION)
    assert exposed_s > 0  # TP 8 without overlap, across NVLink
    per_layer_us = exposed_s / training["micro_batches"] / (80 / 1) * 1e6
    assert t.predicted_exposed_communication(document, dense_layers=2) == pytest.approx(2 * per_layer_us)
    too_big = {**document, "workload": {**document["workload"], "gpus": 10**6}}
    assert t.predicted_exposed_communication(too_big, dense_layers=2) is None


def test_the_command_line_prints_the_prediction_beside_the_trace(tmp_path, capsys):
    from simcore.__main__ import main

    scenario = tmp_path / "scenario.json"
    scenario.write_text(json.dumps(_llama_document()))
    path = write(tmp_path / "step.json", STEP)
    assert main(["trace", str(path), "--scenario", str(scenario), "--dense-layers", "1"]) == 0
    out = capsys.readouterr().out
    predicted = t.predicted_split(_llama_document(), dense_layers=1)
    line = next(row for row in out.splitlines() if row.strip().startswith("attention"))
    assert f"{predicted['attention'] / 1e3:9.2f} ms  {predicted['attention'] / 20 - 1:+6.1%}" in line
    assert main(["trace", str(path), "--scenario", str(tmp_path / "missing.json")]) == 2
    assert "cannot read" in capsys.readouterr().err


def test_a_calibration_from_the_trace_makes_the_prediction_match_it_by_the_shares_it_names():
    """The synthetic step as two dense layers of the Llama document: the GEMM share at BF16 scaled until
    the GEMMs' predicted time is the traced 40 us, the HBM share until the casts and other compute are
    the traced 14 us together; a share never passes 1 (the GEMMs cannot run faster than the peak)."""
    from simcore.formulas.devices import FAMILIES

    document = _llama_document(global_batch=8, micro_batch=1, seq_len=256)
    predicted = t.predicted_split(document, dense_layers=1)
    traced = {"gemm": 4 * predicted["gemm"], "attention": predicted["attention"], "quantize": 0.0,
              "other_compute": 2 * predicted["other_compute"]}
    calibrated = t.trace_calibration(document, traced, dense_layers=1)
    shares = calibrated["constants"]
    assert shares["gemm_fraction"]["family"] == FAMILIES["hopper"].gemm_fraction
    assert shares["gemm_fraction"]["value"] < shares["gemm_fraction"]["family"]
    assert calibrated["predicted_us"]["gemm"] == pytest.approx(traced["gemm"], rel=1e-3)
    assert calibrated["predicted_us"]["other_compute"] == pytest.approx(traced["other_compute"], rel=1e-3)
    assert shares["hbm_fraction"]["from"] == ("quantize", "other_compute")
    faster = t.trace_calibration(document, {**traced, "gemm": predicted["gemm"] / 10}, dense_layers=1)
    assert faster["constants"]["gemm_fraction"]["value"] == 1.0
    with pytest.raises(ScenarioError, match="no gemm time"):
        t.trace_calibration(document, {**traced, "gemm": 0.0}, dense_layers=1)
