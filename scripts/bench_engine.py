"""Benchmark: the engine of one checkout as a one-shot CLI, one scenario and a 1M-point grid.

Run it for two checkouts (a ``git worktree`` of the commit before, and this one) in one sitting to
compare them on the same machine load:
  .venv/bin/python scripts/bench_engine.py [ROOT ...]
Each ROOT (default: this repository) is measured with its own ``simcore``: the median of 12 runs of
``python -m simcore evaluate`` on the Fire-Flyer preset with LLaMa-13B (bytecode caching on), the
best of 15 x 40 ``simcore.evaluate`` calls of the same document, and ``bench_analytical``.
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

MEASURE = """
import json, sys, timeit
from simcore import evaluate
from simcore.tools.bench import bench_analytical
document = json.load(open(sys.argv[1]))
one_s = min(timeit.repeat(lambda: evaluate(document), number=40, repeat=15)) / 40
print(json.dumps({"one_s": one_s, "grid": bench_analytical(1_000_000)["points_per_s"]}))
"""


def measure(root: Path, document_path: str) -> str:
    env = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = str(root)
    cli_s = []
    for _ in range(12):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "simcore", "evaluate", document_path], stdout=subprocess.DEVNULL,
                       env=env, check=True, cwd=tempfile.gettempdir())
        cli_s.append(time.perf_counter() - start)
    figures = json.loads(subprocess.run([sys.executable, "-c", MEASURE, document_path], env=env, check=True,
                                        capture_output=True, text=True, cwd=tempfile.gettempdir()).stdout)
    return (f"{root}: CLI evaluate median {statistics.median(cli_s):.3f} s (min {min(cli_s):.3f}); one scenario "
            f"{figures['one_s'] * 1e3:.2f} ms; 1M-point grid {figures['grid']:,.0f} points/s")


def main():
    sys.path.insert(0, str(ROOT))
    from simcore.tools.references import FF_2ZONE, LLAMA_13B

    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as handle:
        json.dump({"cluster": FF_2ZONE, "workload": {**LLAMA_13B, "gpus": 512}}, handle)
    for root in [Path(arg).resolve() for arg in sys.argv[1:]] or [ROOT]:
        print(measure(root, handle.name))
    os.unlink(handle.name)


if __name__ == "__main__":
    main()
