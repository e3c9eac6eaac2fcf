"""The engine as a package: `pip install ./engine` in a fresh virtual environment gives the
`simcore` command and the notebook example runs on it; `pip install .` installs the whole project
with its catalogue, templates and static files."""
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCENARIO = {"cluster": {"node_count": 100, "node": {"gpus": 8, "accelerator": {"family": "ampere",
                                                                               "peak_fp16_tflops": 312, "tdp_w": 400},
                                                    "compute_nics": 1, "compute_nic_gbit_s": 200},
                        "fabric": {"switch_radix": 40, "switch_gbit_s": 200}}}


def _venv(path: Path) -> Path:
    subprocess.run([sys.executable, "-m", "venv", str(path)], check=True)
    return path / "bin"


def _pip(bin_dir: Path, *args):
    subprocess.run([str(bin_dir / "python"), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", *args],
                   check=True, timeout=600)


@pytest.fixture(scope="module")
def engine_venv(tmp_path_factory):
    """A fresh environment with only the engine distribution (and NumPy)."""
    work = tmp_path_factory.mktemp("engine")
    shutil.copytree(ROOT / "simcore", work / "simcore", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "engine", work / "engine")
    bin_dir = _venv(work / "venv")
    _pip(bin_dir, str(work / "engine"))
    return bin_dir


def test_the_engine_installs_alone_with_its_command(engine_venv):
    listed = subprocess.run([str(engine_venv / "python"), "-m", "pip", "list", "--format", "json"],
                            capture_output=True, text=True, check=True).stdout
    names = {p["name"].lower() for p in json.loads(listed)}
    assert {"simcore", "numpy"} <= names and not names & {"scipy", "django", "celery", "channels"}
    evaluated = subprocess.run([str(engine_venv / "simcore"), "evaluate", "-"], input=json.dumps(SCENARIO),
                               capture_output=True, text=True, check=True, cwd="/")
    import simcore

    assert json.loads(evaluated.stdout) == json.loads(json.dumps(simcore.evaluate(SCENARIO)))  # the same engine


def test_the_notebook_example_runs_on_the_installed_engine(engine_venv):
    run = subprocess.run([str(engine_venv / "python"), str(ROOT / "docs" / "examples" / "notebook.py")],
                         capture_output=True, text=True, cwd="/")
    assert run.returncode == 0, run.stderr
    assert run.stdout.splitlines()[0].split() == ["nodes", "switches", "capex", "step", "(s)", "MFU"]


def test_the_project_installs_with_its_data_files(tmp_path):
    source = tmp_path / "src"
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(".git", ".venv", "var", "test-artifacts", "build",
                                                                "*.egg-info", "__pycache__", "node_modules"))
    bin_dir = _venv(tmp_path / "venv")
    _pip(bin_dir, "--no-deps", str(source))
    files = subprocess.run([str(bin_dir / "python"), "-m", "pip", "show", "-f", "ai-cluster-planner"],
                           capture_output=True, text=True, check=True).stdout
    for expected in ("planner/catalog/data/plans/ff2-pcie-2zone.yaml", "frontend/templates/frontend/base.html",
                     "frontend/static/frontend/js/main.js", "simcore/stages/scenario.py", "config/settings/base.py"):
        assert expected in files
    assert (bin_dir / "simcore").exists()
