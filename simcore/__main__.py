"""Command line: ``simcore evaluate FILE|-``, ``validate``, ``fit``, ``fields``, ``bench`` and ``trace FILE``
(also run as ``python -m simcore``)."""
import argparse
import json
import os
import sys
from pathlib import Path

from simcore.errors import ScenarioError


def main(argv=None) -> int:
    from simcore.version import ENGINE_VERSION

    parser = argparse.ArgumentParser(prog="simcore", description=__doc__)
    parser.add_argument("--version", action="version", version=f"simcore {ENGINE_VERSION}")
    commands = parser.add_subparsers(dest="command", required=True)
    evaluate_cmd = commands.add_parser("evaluate", help="evaluate a scenario document and print the result JSON")
    evaluate_cmd.add_argument("file", help="path to a JSON scenario document, or - for standard input")
    validate_cmd = commands.add_parser(
        "validate", help="compare the engine with every published reference case; exits 1 when a case fails that "
                         "is not a known miss")
    validate_cmd.add_argument("--json", action="store_true", help="print rows and summary as JSON")
    validate_cmd.add_argument("--known-misses", action="store_true",
                              help="list the cases the engine is known to miss, each with why, and exit")
    fit_cmd = commands.add_parser(
        "fit", help="fit the constants no microbenchmark gives over the development set (bounded least squares) "
                    "and leave each group of rows out in turn; print the fits")
    fit_cmd.add_argument("--write", action="store_true", help="store the fits in simcore/data/fitted_constants.yaml")
    commands.add_parser("fields", help="print the scenario document's fields as Markdown tables")
    bench_cmd = commands.add_parser("bench", help="print throughput figures")
    bench_cmd.add_argument("--points", type=int, default=1_000_000)
    bench_cmd.add_argument("--replicas", type=int, default=1_000)
    trace_cmd = commands.add_parser("trace", help="split a profiler trace (Chrome-trace JSON, gzip or not) on its "
                                                  "timeline: where each rank's span goes")
    trace_cmd.add_argument("file", help="path to the trace")
    trace_cmd.add_argument("--window-us", type=float, nargs=2, metavar=("START", "END"),
                           help="keep the GPU events inside this range of the trace's own clock (microseconds)")
    trace_cmd.add_argument("--json", action="store_true", help="print the split as JSON")
    trace_cmd.add_argument("--scenario", help="a scenario document (JSON) whose workload the trace ran: print the "
                                              "engine's prediction for the traced layers beside the trace")
    trace_cmd.add_argument("--moe-layers", type=int, default=0, help="MoE layers traced (forward and backward)")
    trace_cmd.add_argument("--dense-layers", type=int, default=0, help="dense layers traced (forward and backward)")
    trace_cmd.add_argument("--calibrate", action="store_true",
                           help="with --scenario: the GEMM and HBM shares that make the prediction match the "
                                "trace, and the prediction with them")
    args = parser.parse_args(argv)
    try:
        return _run(args)
    except BrokenPipeError:  # the reader (head, less) closed the pipe: stop quietly, as Unix tools do
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # Python's advice: no second error at exit
        return 1


def _run(args) -> int:
    if args.command == "evaluate":
        return _evaluate(args.file)
    if args.command == "validate":
        return _known_misses() if args.known_misses else _validate(args.json)
    if args.command == "trace":
        return _trace(args)
    if args.command == "fit":
        from simcore.tools import fit

        entries = fit.fit_all()
        print("\n".join(fit.report(entries)))
        if args.write:
            fit.write(entries)
        return 0
    if args.command == "fields":
        from simcore.document import fields_markdown

        print(fields_markdown())
        return 0
    from simcore.tools.bench import run_all

    for line in run_all(args.points, args.replicas):
        print(line)
    return 0


def _evaluate(path: str) -> int:
    from simcore.stages.scenario import evaluate

    try:
        text = sys.stdin.read() if path == "-" else Path(path).read_text(encoding="utf-8")
    except OSError as error:
        print(f"error: cannot read {path}: {error.strerror}", file=sys.stderr)
        return 2
    try:
        document = json.loads(text)
    except json.JSONDecodeError as error:
        print(f"error: not valid JSON: {error}", file=sys.stderr)
        return 2
    try:
        result = evaluate(document)
    except ScenarioError as error:
        print(f"error: {error.field}: {error.reason}", file=sys.stderr)
        return 2
    json.dump(result, sys.stdout, indent=2)
    print()
    return 0


def _trace(args) -> int:
    """A trace's split per rank (:func:`simcore.tools.trace.timeline`), with ``--scenario`` the
    engine's prediction for the traced layers beside it, and the heaviest kernels."""
    from simcore.tools.trace import (
        PART_LABELS,
        PARTS,
        predicted_exposed_communication,
        predicted_split,
        read_trace,
        timeline,
        trace_calibration,
    )

    try:
        read = read_trace(args.file)
        split = timeline(read, tuple(args.window_us) if args.window_us else None, by_step=bool(read.steps))
        document = json.loads(Path(args.scenario).read_text(encoding="utf-8")) if args.scenario else None
        predicted = predicted_split(document, args.moe_layers, args.dense_layers) if document else {}
        communication = predicted_exposed_communication(document, args.moe_layers, args.dense_layers) \
            if document else None
        if communication is not None:
            predicted["communication"] = communication
        calibrated = trace_calibration(document, {k: v[0] for k, v in split["parts_us"].items()}, args.moe_layers,
                                       args.dense_layers) if document and args.calibrate else None
        if calibrated and communication is not None:
            calibrated["predicted_us"]["communication"] = communication
    except OSError as error:
        print(f"error: cannot read {error.filename}: {error.strerror}", file=sys.stderr)
        return 2
    except ScenarioError as error:
        print(f"error: {error.field}: {error.reason}", file=sys.stderr)
        return 2
    if args.json:
        json.dump({**split, "predicted_us": predicted, "calibration": calibrated, "devices": read.devices,
                   "distributed": read.distributed}, sys.stdout, indent=2)
        print()
        return 0
    device = read.devices[0].get("name", "") if read.devices else ""
    print(f"{args.file}: {read.start_us.size:,} GPU events, {device} {read.distributed or ''}".rstrip())
    if read.steps:
        print(f"profiler steps {read.steps[0]} to {read.steps[-1]} marked: each rank's steps split apart")
    for index, rank in enumerate(split["ranks"]):
        span = split["span_us"][index]
        print(f"{_group(rank)}: {span / 1e3:.2f} ms traced" + ("; the engine predicts" if predicted else ""))
        for name, values in split["parts_us"].items():
            beside = f"  {predicted[name] / 1e3:9.2f} ms  {predicted[name] / values[index] - 1:+6.1%}" \
                if name in predicted and values[index] else ""
            print(f"  {PART_LABELS[name]:24} {values[index] / 1e3:9.2f} ms  {values[index] / span:6.1%}{beside}")
        print(f"  {'communication under compute':24} {split['overlapped_communication_us'][index] / 1e3:9.2f} ms")
    if calibrated:
        _print_calibration(calibrated, split)
    print("heaviest kernels:")
    for name, (part, count, total_us) in list(read.kernel_names.items())[:12]:
        print(f"  {total_us / 1e3:8.2f} ms {count:>6} x  {PARTS[part]:14} {name[:90]}")
    return 0


def _group(group) -> str:
    """A timeline group as printed: a rank, or a rank's profiler step."""
    return f"rank {group[0]}, step {group[1]}" if isinstance(group, list) else f"rank {group}"


def _print_calibration(calibrated: dict, split: dict) -> None:
    """The shares the trace calibrates (the first rank's), and the prediction with them."""
    from simcore.tools.trace import PART_LABELS

    print(f"calibrated from the trace ({_group(split['ranks'][0])}):")
    for name, constant in calibrated["constants"].items():
        print(f"  {name:20} {constant['value']:.4f} (the family's {constant['family']:.4f}), "
              f"from {' and '.join(constant['from'])}")
    for name, value in calibrated["predicted_us"].items():
        traced = split["parts_us"][name][0]
        print(f"  {PART_LABELS[name]:24} {value / 1e3:9.2f} ms calibrated against {traced / 1e3:.2f} traced")
    if "communication" in calibrated["predicted_us"]:
        total, span = sum(calibrated["predicted_us"].values()), split["span_us"][0]
        print(f"  {'the traced span':24} {total / 1e3:9.2f} ms calibrated against {span / 1e3:.2f} traced "
              f"({total / span - 1:+.1%}; copies and idle are not predicted)")


def _known_misses() -> int:
    from simcore.tools.references import KNOWN_MISSES

    for key, reason in KNOWN_MISSES.items():
        print(f"{key}: {reason}")
    return 0


def _validate(as_json: bool) -> int:
    """Every reference case against its criterion; 1 when one fails that is not a known miss, or a
    known miss now passes (the list is then stale), else 0."""
    from simcore.fitted import declarations
    from simcore.formulas.devices import constant_rows
    from simcore.stages.scenario import EngineParams
    from simcore.tools.fit import report
    from simcore.tools.references import KNOWN_MISSES, validate

    rows, summary = validate()
    constants = constant_rows(EngineParams().fitted)
    unexpected = [row["key"] for row in rows if not row["passes"] and row["key"] not in KNOWN_MISSES]
    stale = [row["key"] for row in rows if row["passes"] and row["key"] in KNOWN_MISSES]
    if as_json:
        json.dump({"cases": rows, "summary": summary, "family_constants": constants,
                   "fitted_constants": list(declarations()),
                   "unexpected_failures": unexpected, "known_misses_now_passing": stale}, sys.stdout, indent=2)
        print()
        return 1 if unexpected or stale else 0
    print(f"{'case':34} {'published':>11} {'predicted':>11} {'error':>8}  criterion       result")
    for row in rows:
        mark = "pass" if row["passes"] else ("FAIL (known miss)" if row["key"] in KNOWN_MISSES else "FAIL")
        calibrated = (" (calibration point)" if row["calibration"] else "") + (
            " (weak check)" if row["weak_check"] else "") + (
            f" (fitted on; held out {row['held_out_error']:+.1%})" if row["fitted"] else "")
        print(f"{row['key']:34} {row['published']:>11.4g} {row['predicted']:>11.4g} {row['error']:>+8.1%}  "
              f"{row['criterion']:15} {mark}{calibrated}")
    print("weak check: a window around one published value, which passes predictions further off than the "
          "figure is; read the error")
    print()
    print(f"{'model':32} {'cases':>5} {'pass':>5} {'mean |err|':>10} {'max |err|':>10}")
    for model, entry in summary.items():
        print(f"{model:32} {entry['cases']:>5} {entry['passing']:>5} {entry['mean_abs_error']:>10.1%} "
              f"{entry['max_abs_error']:>10.1%}")
    print()
    print("calibrated constants: accelerator families, the host, the MoE router (each from a microbenchmark or "
          "a profile; one marked fitted is fitted over the development set, below):")
    for row in constants:
        print(f"  {row['family']:10} {row['constant']:20} {row['value']:8.4f}  {row['confidence']:9}  "
              f"{row['source']}")
    print()
    print("fitted constants: no microbenchmark gives them; fitted over the rows marked 'fitted on' by "
          "`python -m simcore fit` (bounded least squares), each group of rows left out in turn:")
    for line in report(list(declarations())):
        print(f"  {line}")
    print()
    failing = sum(not row["passes"] for row in rows)
    print(f"{failing} of {len(rows)} cases fail their criterion, {failing - len(unexpected)} of them known misses "
          "(simcore validate --known-misses says why)")
    for key in unexpected:
        print(f"unexpected failure: {key}")
    for key in stale:
        print(f"known miss now passing (remove it from KNOWN_MISSES): {key}")
    return 1 if unexpected or stale else 0


if __name__ == "__main__":
    sys.exit(main())
