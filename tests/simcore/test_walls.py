"""simcore imports only the standard library and NumPy."""
import ast
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


def _scipy_modules_after(document: str) -> set[str]:
    code = ("import sys, simcore; from simcore.tools.references import FF_2ZONE, LLAMA_13B; "
            f"simcore.evaluate({document}); print(sorted(m for m in sys.modules if m.split('.')[0] == 'scipy'))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return set(ast.literal_eval(result.stdout))


def test_scipy_is_loaded_only_by_what_needs_it():
    """SciPy's special functions (Lambert W, the binomial quantile) come with a job's reliability; a
    cluster-only evaluation loads none of SciPy, and nothing loads scipy.stats (0.7 s to import)."""
    assert _scipy_modules_after("{'cluster': FF_2ZONE}") == set()
    with_job = _scipy_modules_after("{'cluster': FF_2ZONE, 'workload': {**LLAMA_13B, 'gpus': 512}}")
    assert "scipy.special" in with_job and not any(m.startswith("scipy.stats") for m in with_job)


def test_public_api_is_declared():
    import simcore

    for name in simcore.__all__:
        assert hasattr(simcore, name), name
    assert simcore.ENGINE_VERSION
