"""Measurements from the user's own cluster, read and set beside the engine's predictions.

Two kinds of file:

* **nccl-tests output** (NVIDIA/nccl-tests: ``all_reduce_perf``, ``all_gather_perf``,
  ``reduce_scatter_perf``, ``alltoall_perf``), the text they print or their ``-J`` JSON report:
  ``#  Rank ...`` lines naming each rank's host and device, then one row per message size: size (B),
  count, type, [redop], [root], then time (us; cputime with ``-C 1``), algbw and busbw (GB/s, 10^9
  bytes) and the error count, out of place and in place (:func:`parse_nccl_tests` lists the variants).
  ``busbw = algbw x`` the collective's bus factor (nccl-tests doc/PERFORMANCE.md): ``2(n-1)/n`` for
  allreduce, ``(n-1)/n`` for allgather, reduce-scatter and all-to-all. The out-of-place columns are
  the measurement.
* **A GEMM benchmark CSV** with the header ``m,n,k,dtype,tflops`` (dtype fp16, bf16, tf32 or fp8).

The predictions are the engine's own, from the node's datasheet facts and its family's shares (any
calibration in the node's scenario is ignored, so a measurement is always compared with the model):
a GEMM through :func:`simcore.formulas.transformer.gemm_time_s`; a collective inside one scale-up domain as
a ring over the link at the family's nccl-tests share (with NVLink SHARP's gain for an allreduce on
switches that have it), inside a node without one over PCIe, and across nodes by
:func:`simcore.formulas.collectives.nccl_allreduce` (the ring's bound for the other collectives).

Fitting: predicted compute-bound GEMM time and large-message scale-up collective time are both
inversely proportional to the family's share, so the measured share is the family's times the
median measured / predicted ratio: over the compute-bound rows of the dtype (16-bit rows give
``gemm_fraction``, FP8 rows ``fp8_gemm_fraction``), and over the messages of at least
``FIT_MIN_BYTES`` (the largest alone when none is that big) for ``scaleup_fraction``.
"""
import csv
import io
import json
import re
from dataclasses import dataclass

import numpy as np

from simcore import fitted
from simcore.arrays import MAX_MAGNITUDE, MIN_POSITIVE
from simcore.document import parse_node
from simcore.errors import ScenarioError
from simcore.formulas import collectives, transformer
from simcore.formulas.collectives import CollectiveParams
from simcore.formulas.compute import full_clock_w, sustained_clock_factor
from simcore.formulas.devices import FAMILIES, with_fitted
from simcore.formulas.node import domain_io, node_io, scaleup_domain_gpus
from simcore.stages import job

COLLECTIVES = ("all_reduce", "all_gather", "reduce_scatter", "alltoall")
FIT_MIN_BYTES = 64 * 2**20
GEMM_COLUMNS = ("m", "n", "k", "dtype", "tflops")
GEMM_DTYPES = ("fp16", "bf16", "tf32", "fp8", "nvfp4", "mxfp4")
FIT_BY_DTYPE = {"fp16": "gemm_fraction", "bf16": "gemm_fraction", "fp8": "fp8_gemm_fraction",
                "nvfp4": "fp4_gemm_fraction", "mxfp4": "fp4_gemm_fraction"}
MAX_ROWS = 10_000
# cuBLAS takes GEMM dimensions as 32-bit signed integers (cublasGemmEx's int m, n, k): no benchmark
# row can be larger, and the engine's FLOP count stays finite.
MAX_GEMM_DIM = 2**31 - 1

# "#  Rank  0 Group  0 Pid ... on host device  0 [0x07] name" (nccl-tests 2.13.4 and later print the
# group; earlier releases do not).
_RANK_LINE = re.compile(r"^#\s*Rank\s+(\d+)\s+(?:Group\s+\d+\s+)?Pid\s+\d+\s+on\s+(\S+)\s+"
                        r"device\s+\d+\s+\[[^\]]*\]\s+(.*)$")
# A binary's name wherever it shows: "# Collective test starting: all_reduce_perf" (recent releases),
# or a command line that ran it ("mpirun ... ./build/all_gather_perf -b 8 ...").
_BINARY = re.compile(r"(?:^|[\s/])(all_reduce|all_gather|reduce_scatter|alltoall|[a-z_]+?)_perf(?:_mpi)?\b")
# Prefixes a launcher puts before each line: "srun -l" ("12: "), "mpirun --tag-output" ("[1,0]<stdout>:").
_LAUNCHER_PREFIX = re.compile(r"^(?:\s*\d+:\s?|\[\d+,\d+\]<std(?:out|err)>:)")
_SIZES = re.compile(r"minBytes\s+(\d+)\s+maxBytes\s+(\d+)\s+step:\s*(\d+)\((factor|bytes)\)")
_FOOTER = "# Avg bus bandwidth"
# "# Reducing maxBytes to 1073741824 due to memory limitation": the sizes a smaller card could hold.
_REDUCED = re.compile(r"Reducing maxBytes to\s+(\d+)")
# "# Out of bounds values : 2 FAILED": the run's own check (-c 1) found results out of bounds.
_OUT_OF_BOUNDS = re.compile(r"^# Out of bounds values\s*:\s*(\d+)\s+(\w+)")


def _error(line: int, message: str) -> ScenarioError:
    return ScenarioError("file", f"line {line}: {message}")


@dataclass(frozen=True)
class NcclRun:
    """One nccl-tests run: its collective, ranks, hosts and per-size out-of-place results."""

    collective: str | None
    ranks: int
    hosts: tuple[str, ...]
    devices: tuple[str, ...]
    size_bytes: np.ndarray
    time_us: np.ndarray
    algbw_gbyte_s: np.ndarray
    busbw_gbyte_s: np.ndarray
    header: str

    def rows(self) -> list[dict]:
        return [{"size_bytes": int(s), "time_us": float(t), "algbw_gbyte_s": float(a), "busbw_gbyte_s": float(b)}
                for s, t, a, b in zip(self.size_bytes, self.time_us, self.algbw_gbyte_s, self.busbw_gbyte_s)]


def _float(token: str, line: int, what: str, engine_range: bool = True) -> float:
    """A measured figure: a finite number, zero or more, inside the engine's range
    (:data:`simcore.arrays.MIN_POSITIVE` to :data:`simcore.arrays.MAX_MAGNITUDE`) unless the caller
    bounds it more tightly itself (``engine_range`` False: GEMM dimensions, cuBLAS's int32)."""
    shown = token if len(token) <= 40 else f"{token[:40]}... ({len(token):,} characters)"
    if len(token) > 64:  # no number a benchmark prints is longer; Python's int() refuses past 4,300 digits
        raise _error(line, f"{what} {shown} is not a number")
    try:
        value = float(token)
    except ValueError:
        raise _error(line, f"{what} '{shown}' is not a number") from None
    if not np.isfinite(value) or value < 0:
        raise _error(line, f"{what} {shown} must be a finite, non-negative number")
    if engine_range and (value > MAX_MAGNITUDE or 0 < value < MIN_POSITIVE):
        raise _error(line, f"{what} {shown} is outside the engine's range (zero, or {MIN_POSITIVE:g} to "
                           f"{MAX_MAGNITUDE:g})")
    return value


def expected_sizes(header_line: str, reduced_max_bytes: int | None = None) -> int | None:
    """How many message sizes a run's "minBytes .. maxBytes .. step: N(factor|bytes)" line asks for,
    up to ``reduced_max_bytes`` where nccl-tests lowered maxBytes to fit the card's memory."""
    match = _SIZES.search(header_line)
    if match is None:
        return None
    low, high, step, kind = int(match.group(1)), int(match.group(2)), int(match.group(3)), match.group(4)
    high = high if reduced_max_bytes is None else min(high, reduced_max_bytes)
    if low <= 0 or high < low or step < 1 or (kind == "factor" and step < 2):
        return None
    count, size = 0, low
    while size <= high:
        count, size = count + 1, size * step if kind == "factor" else size + step
    return count


def _check_complete(rows: list, header: str, footer: bool, reduced_max_bytes: int | None = None):
    expected = expected_sizes(header, reduced_max_bytes)
    if expected is not None and len(rows) < expected:
        last = int(rows[-1][0]) if rows else 0
        raise ScenarioError("file", f"truncated: {len(rows)} of the {expected} message sizes the run asked for "
                                    f"(the last read is {last:,} B)")
    if not footer:
        raise ScenarioError("file", f"truncated: no '{_FOOTER.lstrip('# ')}' line after the results")


def _run(collective, ranks: dict, rows: list, header: str) -> NcclRun:
    if not rows:
        raise ScenarioError("file", "no result rows found: is this the output of an nccl-tests binary?")
    if not ranks:
        raise ScenarioError("file", "no '#  Rank ... on <host> device ...' lines: the run's ranks and hosts "
                                    "are unknown")
    if collective is not None and collective not in COLLECTIVES:
        raise ScenarioError("file", f"the file is a {collective} test; supported: {', '.join(COLLECTIVES)}")
    table = np.array(rows, float)
    hosts = tuple(dict.fromkeys(host for host, _ in ranks.values()))
    devices = tuple(dict.fromkeys(device for _, device in ranks.values()))
    return NcclRun(collective, len(ranks), hosts, devices, table[:, 0], table[:, 1], table[:, 2], table[:, 3], header)


def parse_nccl_tests(text: str) -> NcclRun:
    """Read what nccl-tests wrote: its JSON report (``-J``) or the text it prints, from every
    release since 2.10 (rank lines with or without their group, ``time`` or ``cputime`` (``-C 1``)
    columns, per-iteration and timestamp columns), with or without a launcher's prefix on each line
    (``srun -l``, ``mpirun --tag-output``). The columns come from the header line (the first time,
    algbw and busbw are the out-of-place ones); the collective from the binary's name where the
    file shows it (None otherwise: the caller asks); other lines (MPI and NCCL logs) are skipped.
    A run cut short (fewer sizes than it asked for, up to the maxBytes nccl-tests reduced it to for a
    smaller card, or no summary line) is refused as truncated; a result row that does not read, a
    row counting wrong values and a failed "Out of bounds values" check raise a field error with
    their line."""
    if text.lstrip().startswith("{"):
        return _parse_nccl_json(text)
    collective, header, columns, wrong, footer, reduced = None, "", None, [], False, None
    ranks: dict[int, tuple[str, str]] = {}
    rows = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = _LAUNCHER_PREFIX.sub("", raw, count=1).strip()
        if collective is None and (binary := _BINARY.search(line)):
            collective = binary.group(1)
        if reduced_to := _REDUCED.search(line):
            reduced = int(reduced_to.group(1))
        if line.startswith("#"):
            names = line.lstrip("#").split()
            if match := _RANK_LINE.match(line):
                ranks[int(match.group(1))] = (match.group(2), match.group(3).strip())
            elif line.startswith(("# nThread", "# nccl-tests version")):
                header = f"{header}; {line.lstrip('# ')}" if header else line.lstrip("# ")
            elif names[:2] == ["size", "count"] and {"algbw", "busbw"} <= set(names):
                time_name = "time" if "time" in names else "cputime"
                columns = [names.index(name) for name in ("size", time_name, "algbw", "busbw")]
                wrong = [i for i, name in enumerate(names) if name == "#wrong"]
            elif (match := _OUT_OF_BOUNDS.match(line)) and (int(match.group(1)) or match.group(2) != "OK"):
                raise _error(number, f"the run's own check failed ({line.lstrip('# ')}): its results are not a "
                                     "measurement; run it again")
            footer = footer or line.startswith(_FOOTER)
            continue
        tokens = line.split()
        if not tokens or not tokens[0].isdigit():
            continue
        rows.append(_result_row(tokens, columns, number))
        _check_values(tokens, wrong, number)
        if len(rows) > MAX_ROWS:
            raise _error(number, f"more than {MAX_ROWS} result rows")
    run = _run(collective, ranks, rows, header)
    _check_complete(rows, header, footer, reduced)
    return run


def _check_values(tokens: list[str], wrong_columns: list[int], number: int) -> None:
    """A row whose ``#wrong`` columns (nccl-tests' check of the results, ``-c 1``) count wrong
    values is no measurement: the collective corrupted its data. ``N/A``: the run did not check."""
    for index in wrong_columns:
        if index < len(tokens) and tokens[index].isdigit() and int(tokens[index]):
            place = "out-of-place" if index == wrong_columns[0] else "in-place"
            raise _error(number, f"{tokens[index]} wrong values in the {place} result of {tokens[0]} B (nccl-tests' "
                                 "check): the collective corrupted its data, so the run is not a measurement")


def _result_row(tokens: list[str], columns: list[int] | None, number: int) -> tuple[float, ...]:
    if columns is None:
        raise _error(number, "a result row before the '#  size  count  type ...' header that names the columns")
    if len(tokens) <= max(columns):
        raise _error(number, f"a result row has {len(tokens)} columns; the header names {max(columns) + 1} or more")
    size, time_us, algbw, busbw = (_float(tokens[i], number, name)
                                   for i, name in zip(columns, ("size", "time", "algbw", "busbw")))
    if time_us <= 0:
        raise _error(number, f"time {tokens[columns[1]]} us must be positive")
    return size, time_us, algbw, busbw


def _parse_nccl_json(text: str) -> NcclRun:
    """The JSON report nccl-tests writes with ``-J`` (its ``util.cu``, file version 2): the command
    line (``args``, whose first is the binary), ``config`` with its ``devices``, ``results`` (each
    size's ``out_of_place`` time or cpu_time, alg_bw and bus_bw) and the summary that closes it."""
    try:
        report = json.loads(text)
    except json.JSONDecodeError as error:
        raise ScenarioError("file", f"truncated or not JSON: {error.msg} at character {error.pos}") from None
    if not isinstance(report, dict) or not isinstance(report.get("results"), list):
        raise ScenarioError("file", "a JSON report needs a 'results' list (nccl-tests -J output)")
    args = report.get("args") or [""]
    binary = _BINARY.search(str(args[0]))
    config = report.get("config") or {}
    try:
        ranks = {int(d["rank"]): (str(d["hostname"]), str(d["device_info"])) for d in config.get("devices", [])
                 if isinstance(d, dict) and {"rank", "hostname", "device_info"} <= set(d)}
    except (ValueError, TypeError, OverflowError):  # a rank of NaN, infinity or text
        raise ScenarioError("file", "config.devices: each device's rank must be a whole number") from None
    rows = []
    for number, result in enumerate(report["results"], start=1):
        place = result.get("out_of_place") if isinstance(result, dict) else None
        if not isinstance(place, dict):
            raise ScenarioError("file", f"result {number}: no out_of_place figures")
        time_us = place.get("time", place.get("cpu_time"))
        figures = [(result.get("size"), "size"), (time_us, "time"), (place.get("alg_bw"), "algbw"),
                   (place.get("bus_bw"), "busbw")]
        values = tuple(_float(str(value), number, name) for value, name in figures)
        if values[1] <= 0:
            raise ScenarioError("file", f"result {number}: time {time_us} us must be positive")
        rows.append(values)
    header = "; ".join(f"{key} {config[key]}" for key in ("nthreads", "ngpus", "minimum_bytes", "maximum_bytes")
                       if key in config)
    run = _run(binary.group(1) if binary else None, ranks, rows, header)
    sizes = f"minBytes {config.get('minimum_bytes')} maxBytes {config.get('maximum_bytes')} step: " + (
        f"{config['step_factor']}(factor)" if "step_factor" in config else f"{config.get('step_bytes')}(bytes)")
    _check_complete(rows, sizes, "average_bus_bandwidth" in report)
    return run


@dataclass(frozen=True)
class GemmTable:
    m: np.ndarray
    n: np.ndarray
    k: np.ndarray
    dtype: np.ndarray
    tflops: np.ndarray

    def rows(self) -> list[dict]:
        return [{"m": int(m), "n": int(n), "k": int(k), "dtype": str(d), "tflops": float(t)}
                for m, n, k, d, t in zip(self.m, self.n, self.k, self.dtype, self.tflops)]


def parse_gemm_csv(text: str) -> GemmTable:
    """Read a GEMM benchmark CSV (header ``m,n,k,dtype,tflops``, one row per shape)."""
    reader = csv.reader(io.StringIO(text))
    header = next(reader, None)
    if header is None or [h.strip().lower() for h in header] != list(GEMM_COLUMNS):
        raise _error(1, f"the header must be {','.join(GEMM_COLUMNS)}")
    rows = []
    while True:
        try:
            row = next(reader, None)
        except csv.Error as error:  # a cell past the csv module's 131,072 characters, a stray quote
            raise _error(reader.line_num, f"does not read as CSV: {error}") from None
        if row is None:
            break
        number = reader.line_num
        if not any(cell.strip() for cell in row):
            continue
        if len(row) != len(GEMM_COLUMNS):
            raise _error(number, f"{len(row)} columns; expected {len(GEMM_COLUMNS)}")
        dims = [_float(cell.strip(), number, name, engine_range=False) for cell, name in zip(row[:3], GEMM_COLUMNS)]
        if any(d < 1 or d != int(d) for d in dims):
            raise _error(number, "m, n and k must be positive whole numbers")
        if max(dims) > MAX_GEMM_DIM:
            raise _error(number, f"m, n and k must be at most {MAX_GEMM_DIM:,} (cuBLAS's 32-bit dimensions)")
        dtype = row[3].strip().lower()
        if dtype not in GEMM_DTYPES:
            raise _error(number, f"dtype '{row[3].strip()}' is not one of {', '.join(GEMM_DTYPES)}")
        tflops = _float(row[4].strip(), number, "tflops")
        if tflops == 0:
            raise _error(number, "tflops must be positive")
        rows.append((*dims, dtype, tflops))
        if len(rows) > MAX_ROWS:
            raise _error(number, f"more than {MAX_ROWS} rows")
    if not rows:
        raise ScenarioError("file", "the CSV has a header but no rows")
    m, n, k, dtype, tflops = zip(*rows)
    return GemmTable(np.array(m), np.array(n), np.array(k), np.array(dtype), np.array(tflops))


def _node(node_document: dict):
    """The node parsed with its calibration-free family: (parsed node, family, clock factor)."""
    node = parse_node(node_document)
    acc = node["accelerator"]
    family = with_fitted(FAMILIES[acc["family"]], fitted.values())
    return node, family, sustained_clock_factor(acc["tdp_w"], full_clock_w(acc, family.full_clock_power_w))


def _finite(value) -> float | None:
    """A row's figure, or None where it is not a finite number (nothing to show, never a NaN)."""
    value = float(value)
    return value if np.isfinite(value) else None


def _errors_pct(measured_rate, predicted_rate):
    """Per row (predicted - measured) / measured x 100 (NaN where the file's rate rounds to 0), and the
    mean of its magnitude."""
    error = np.divide(predicted_rate - measured_rate, measured_rate, out=np.full(np.shape(measured_rate), np.nan),
                      where=measured_rate > 0) * 100
    return error, float(np.nanmean(np.abs(error))) if np.isfinite(error).any() else None


def compare_gemm(node_document: dict, table: GemmTable) -> dict:
    """Measured against predicted TFLOPS per shape, and the measured shares fitted from the rows."""
    node, family, clock = _node(node_document)
    acc = node["accelerator"]
    predicted = np.full(table.tflops.shape, np.nan)
    compute_bound = np.zeros(table.tflops.shape, bool)
    for dtype in np.unique(table.dtype):
        rows = table.dtype == dtype
        try:
            device, _ = job.device_at(acc, family, clock, dtype)
        except ScenarioError as error:
            raise ScenarioError("file", f"{dtype} rows: {error.reason}") from None
        m, n, k = table.m[rows], table.n[rows], table.k[rows]
        with np.errstate(over="ignore", invalid="ignore"):  # a row past float range predicts nothing (None)
            time_s = transformer.gemm_time_s(m, n, k, device)
            moved = device.gemm_operand_bytes * (m * k + k * n + m * n)
            predicted[rows] = 2 * m * n * k / time_s / 1e12
            compute_bound[rows] = time_s > moved / device.hbm_bytes_s
    error, mean_abs = _errors_pct(table.tflops, predicted)
    fitted = {}
    for constant in dict.fromkeys(FIT_BY_DTYPE.values()):
        use = np.isin(table.dtype, [d for d, c in FIT_BY_DTYPE.items() if c == constant]) & compute_bound
        if use.any():
            ratio = float(np.median(table.tflops[use] / predicted[use]))
            fitted[constant] = {"value": min(getattr(family, constant) * ratio, 1.0),
                                "family_value": getattr(family, constant), "rows": int(use.sum())}
    rows = [{**row, "predicted_tflops": _finite(p), "error_pct": _finite(e), "compute_bound": bool(b)}
            for row, p, e, b in zip(table.rows(), predicted, error, compute_bound)]
    return {"kind": "gemm", "family": family.key, "rows": rows, "mean_abs_error_pct": mean_abs, "fitted": fitted}


BUS_FACTOR = {"all_reduce": lambda n: 2 * (n - 1) / n}


def _bus_factor(collective: str, n):
    return BUS_FACTOR.get(collective, lambda n: (n - 1) / n)(n)


def compare_nccl(node_document: dict, run: NcclRun, collective: str, params: CollectiveParams = CollectiveParams()):
    """Measured against predicted bus bandwidth per message size for the run's ranks and hosts on
    this node type, and the measured scale-up share when the run stayed on the scale-up link."""
    if run.collective is not None and run.collective != collective:
        raise ScenarioError("collective", f"the file is an {run.collective} test, not {collective}")
    if collective not in COLLECTIVES:
        raise ScenarioError("collective", f"must be one of {', '.join(COLLECTIVES)}")
    node, family, _ = _node(node_document)
    g, n, hosts = float(node["gpus"]), run.ranks, len(run.hosts)
    if n > hosts * g:
        raise ScenarioError("file", f"{n} ranks on {hosts} host(s) is more than this node type's {g:g} GPUs each")
    size, topology, acc = run.size_bytes, node["nvlink_topology"], node["accelerator"]
    all_to_all = topology == "all-to-all"
    domain = float(scaleup_domain_gpus(node)) if all_to_all else (2.0 if topology == "pairs" else 1.0)
    io = node_io(node, acc, np.asarray(g), family.scaleup_fraction, params)
    if n <= domain and float(acc["scaleup_bw_gbyte_s"]) > 0 and (hosts == 1 or domain > g):
        link = "scale-up"
        sharp = collective == "all_reduce" and all_to_all and node["nvlink_sharp"]
        gain = family.nvls_allreduce_gain if sharp and not np.isnan(family.nvls_allreduce_gain) else 1.0
        bw, latency = float(io.scaleup_bw_gbyte_s) * gain, params.scaleup_latency_s
    elif hosts == 1:
        link, bw, latency = "PCIe", float(io.pcie_bw_gbyte_s) / 2, params.hop_latency_s
    else:
        # Across nodes: the run's hosts (or scale-up domains) as its units, each with the GPUs the run
        # used there and the NICs nearest those GPUs (the node's NICs in proportion).
        link, latency = "network", params.hop_latency_s
        units = max(float(np.ceil(n / domain)), 1.0) if all_to_all and domain > g else float(hosts)
        per_unit = n / units
        unit_io = domain_io(io, g, per_unit)
        across = collectives.nccl_allreduce(size, np.asarray(units), unit_io, nvlink_all_to_all=all_to_all,
                                            params=params)
        bw = min(float(np.min(across.bounds_gbyte_s[name])) for name in collectives.NCCL_LABELS
                 if name.startswith("ring:"))
    if link == "network" and collective == "all_reduce":
        time_s = across.time_s
    elif collective == "all_reduce":
        time_s = collectives.ring_allreduce_time_s(size, n, bw, latency)
        if link == "scale-up":  # NCCL's LL protocol for small messages, as its tuner picks it
            time_s = np.minimum(time_s, collectives.low_latency_allreduce_time_s(size, n, bw, params))
    else:
        time_s = collectives.ring_collective_time_s(size, n, bw, latency)
        if link == "scale-up":
            time_s = np.minimum(time_s, collectives.low_latency_ring_time_s(size, n, bw, params))
    predicted = size / (time_s * 1e9) * _bus_factor(collective, n)
    # Bus bandwidth is size / time x a constant: its error is the time's, which the file gives unrounded.
    error, mean_abs = _errors_pct(1 / run.time_us, 1e-6 / time_s)
    fitted = {}
    if link == "scale-up":
        use = size >= FIT_MIN_BYTES
        use = use if use.any() else size == size.max()
        ratio = float(np.median(time_s[use] * 1e6 / run.time_us[use]))
        fitted["scaleup_fraction"] = {"value": min(family.scaleup_fraction * ratio, 1.0),
                                      "family_value": family.scaleup_fraction, "rows": int(use.sum())}
    rows = [{**row, "predicted_busbw_gbyte_s": _finite(p), "error_pct": _finite(e)}
            for row, p, e in zip(run.rows(), predicted, error)]
    return {"kind": "nccl-tests", "family": family.key, "collective": collective, "ranks": n, "hosts": hosts,
            "link": link, "rows": rows, "mean_abs_error_pct": mean_abs, "fitted": fitted}
