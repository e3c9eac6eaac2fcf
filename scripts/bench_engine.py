"""Benchmark: the engine of one checkout as a one-shot CLI, one scenario, a 1M-point grid and a 1M-point layout grid.

Run it for two checkouts (a ``git worktree`` of the commit before, and this one) in one sitting to
compare them on the same machine load:
  .venv/bin/python scripts/bench_engine.py [ROOT ...]
Each ROOT (default: this repository) is measured with its own ``simcore``: the median of 12 runs of
``python -m simcore evaluate`` on the Fire-Flyer preset with LLaMa-13B (bytecode caching on), the
best of 15 x 40 ``simcore.evaluate`` calls of the same document, ``bench_analytical`` and the best of
three ``evaluate_parsed`` calls on the 1M-point layout grid (``simcore.tools.bench.layout_grid_document``,
built by this checkout so that an older engine runs the same document).
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
import json, sys, time, timeit
from simcore import evaluate
from simcore.document import parse
from simcore.stages.scenario import EngineParams, evaluate_parsed
from simcore.tools.bench import bench_analytical
document = json.load(open(sys.argv[1]))
one_s = min(timeit.repeat(lambda: evaluate(document), number=40, repeat=15)) / 40
layouts = parse(json.load(open(sys.argv[2])))
layouts_s = []
for _ in range(3):
    start = time.perf_counter()
    evaluate_parsed(layouts, EngineParams())
    layouts_s.append(time.perf_counter() - start)
print(json.dumps({"one_s": one_s, "grid": bench_analytical(1_000_000)["points_per_s"],
                  "layouts": 1_000_000 / min(layouts_s)}))
"""


def measure(root: Path, document_path: str, layouts_path: str) -> str:
    env = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = str(root)
    cli_s = []
    for _ in range(12):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "simcore", "evaluate", document_path], stdout=subprocess.DEVNULL,
                       env=env, check=True, cwd=tempfile.gettempdir())
        cli_s.append(time.perf_counter() - start)
    figures = json.loads(subprocess.run([sys.executable, "-c", MEASURE, document_path, layouts_path], env=env,
                                        check=True,
                                        capture_output=True, text=True, cwd=tempfile.gettempdir()).stdout)
    return (f"{root}: CLI evaluate median {statistics.median(cli_s):.3f} s (min {min(cli_s):.3f}); one scenario "
            f"{figures['one_s'] * 1e3:.2f} ms; 1M-point grid {figures['grid']:,.0f} points/s; 1M-point layout grid "
            f"{figures['layouts']:,.0f} points/s")


def main():
    sys.path.insert(0, str(ROOT))
    from simcore.tools.bench import layout_grid_document
    from simcore.tools.references import FF_2ZONE, LLAMA_13B

    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as handle, \
            tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as layouts:
        json.dump({"cluster": FF_2ZONE, "workload": {**LLAMA_13B, "gpus": 512}}, handle)
        json.dump(layout_grid_document(1_000_000), layouts)
    for root in [Path(arg).resolve() for arg in sys.argv[1:]] or [ROOT]:
        print(measure(root, handle.name, layouts.name))
    os.unlink(handle.name)
    os.unlink(layouts.name)


if __name__ == "__main__":
    main()
