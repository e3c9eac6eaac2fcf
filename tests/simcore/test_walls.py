"""simcore imports only the standard library and NumPy."""
import subprocess
import sys


def test_importing_simcore_pulls_in_no_web_framework():
    code = (
        "import sys, simcore, simcore.__main__, simcore.tools.bench; simcore.evaluate; "
        "bad = [m for m in sys.modules if m.split('.')[0] in {'django', 'celery', 'channels', 'rest_framework', "
        "'kombu', 'redis', 'daphne'}]; print(','.join(bad))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == ""


def test_an_evaluation_with_a_workload_loads_no_scipy():
    """The one-shot CLI's common path: SciPy's import alone took longer than the evaluation."""
    code = ("import json, sys, simcore; from simcore.tools.references import FF_2ZONE, LLAMA_13B; "
            "simcore.evaluate({'cluster': FF_2ZONE, 'workload': {**LLAMA_13B, 'gpus': 512}}); "
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'scipy'))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"


def test_public_api_is_declared():
    import simcore

    for name in simcore.__all__:
        assert hasattr(simcore, name), name
    assert simcore.ENGINE_VERSION
