"""Importing the engine reads no data file: the validation record and the fitted constants are read on
first use (a CLI evaluation, a library call), so ``import simcore`` stays quick."""
import json
import subprocess
import sys

from simcore.tools.references import scenario

CODE = """
import json, sys
import simcore, simcore.fitted as fitted, simcore.tools.references as references
def read():
    return references.record.cache_info().currsize, fitted.declarations.cache_info().currsize
print(*read())
simcore.evaluate(json.loads(sys.argv[1]))
print(*read())
print(len(simcore.CASES) > 100, references.record.cache_info().currsize)
"""


def test_importing_the_engine_reads_neither_the_record_nor_the_fitted_constants():
    document = json.dumps(scenario("llama-13b-64"))
    out = subprocess.run([sys.executable, "-c", CODE, document], capture_output=True, text=True, timeout=120,
                         check=True).stdout
    # Nothing read at import; an evaluation reads the fitted constants alone; the record when it is asked for.
    assert out.split("\n")[:3] == ["0 0", "0 1", "True 1"]


def test_the_engine_imports_under_warnings_as_errors_without_yaml_and_prints_its_time():
    """``python -W error -c "import simcore"``: no warning at import (a deprecation fails it), no YAML
    parser or SciPy loaded (each loads on first use), and the import's time printed, the best of
    three fresh interpreters (speed targets are benchmarks' figures, not assertions)."""
    code = ("import sys, time; began = time.perf_counter(); import simcore; took = time.perf_counter() - began; "
            "print(took, sorted(name for name in ('yaml', 'scipy', 'ijson') if name in sys.modules))")
    runs = [subprocess.run([sys.executable, "-W", "error", "-c", code], capture_output=True, text=True, timeout=60,
                           check=True).stdout.split(maxsplit=1) for _ in range(3)]
    assert {loaded.strip() for _, loaded in runs} == {"[]"}
    print(f"import simcore: {min(float(took) for took, _ in runs) * 1e3:.0f} ms (best of 3)")
