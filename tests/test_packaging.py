"""The engine as a package: `python -m build engine` makes an sdist and a wheel; the wheel in a
fresh virtual environment gives the `simcore` command, runs the notebook example and, with the
sdist, passes the engine's tests away from the checkout; `pip install ./engine .` installs the
whole project with its catalogue, templates and static files, each file owned by one distribution."""
import json
import shutil
import subprocess
import sys
import tarfile
import zipfile
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


def _copy(relative: str, to: Path):
    """A file or folder of the checkout, copied (links kept as links) without caches."""
    source = ROOT / relative
    if source.is_dir():
        shutil.copytree(source, to / relative, symlinks=True, ignore=shutil.ignore_patterns("__pycache__"))
    else:
        (to / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(source, to / relative)


@pytest.fixture(scope="module")
def engine_dist(tmp_path_factory) -> Path:
    """`python -m build engine` on a copy of the checkout's engine and its package: the folder
    holding the sdist and the wheel."""
    work = tmp_path_factory.mktemp("engine-build")
    for part in ("simcore", "engine"):
        _copy(part, work / "src")
    tools = _venv(work / "tools")
    _pip(tools, "build")
    subprocess.run([str(tools / "python"), "-m", "build", str(work / "src" / "engine"), "--outdir", str(work / "dist")],
                   check=True, capture_output=True, timeout=600)
    return work / "dist"


@pytest.fixture(scope="module")
def engine_venv(tmp_path_factory, engine_dist):
    """A fresh environment with only the engine's wheel (and NumPy)."""
    bin_dir = _venv(tmp_path_factory.mktemp("engine") / "venv")
    _pip(bin_dir, str(next(engine_dist.glob("*.whl"))))
    return bin_dir


def test_the_build_gives_an_sdist_and_a_wheel_of_the_package_and_leaves_one_source(engine_dist):
    sdist, wheel = next(engine_dist.glob("simcore-*.tar.gz")), next(engine_dist.glob("simcore-*.whl"))
    import simcore

    assert sdist.name == f"simcore-{simcore.__version__}.tar.gz"
    with tarfile.open(sdist) as archive:
        assert f"simcore-{simcore.__version__}/simcore/stages/scenario.py" in archive.getnames()
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
    assert {"simcore/__init__.py", "simcore/formulas/reliability.py", "simcore/tools/references.py"} <= names
    assert (ROOT / "engine" / "simcore").is_symlink()  # the repository's simcore/, not a copy
    assert {path.name for path in (ROOT / "engine").iterdir()} <= {"pyproject.toml", "simcore", "build", "dist",
                                                                   "simcore.egg-info"}


def test_the_engine_tests_pass_on_the_installed_sdist_away_from_the_checkout(tmp_path, engine_dist):
    """The engine's own tests (and the data and docs they read), copied away from the checkout,
    run against the sdist installed with its pandas extra in a fresh environment: nothing comes
    from the repository."""
    from importlib.metadata import version

    bin_dir = _venv(tmp_path / "venv")
    _pip(bin_dir, f"simcore[pandas] @ {next(engine_dist.glob('*.tar.gz')).as_uri()}",
         *(f"{name}=={version(name)}" for name in ("pytest", "hypothesis", "scipy")))
    for part in ("tests/__init__.py", "tests/simcore", "tests/data", "docs/scenario-format.md"):
        _copy(part, tmp_path / "away")
    run = subprocess.run([str(bin_dir / "python"), "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/simcore"],
                         cwd=tmp_path / "away", capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    assert "skipped" not in run.stdout.splitlines()[-1]  # to_frame's test runs here, with the pandas extra
    located = subprocess.run([str(bin_dir / "python"), "-c", "import simcore; print(simcore.__file__)"],
                             cwd=tmp_path / "away", capture_output=True, text=True, check=True).stdout
    assert located.startswith(str(tmp_path / "venv"))


def test_the_engine_installs_alone_with_its_command(engine_venv):
    listed = subprocess.run([str(engine_venv / "python"), "-m", "pip", "list", "--format", "json"],
                            capture_output=True, text=True, check=True).stdout
    names = {p["name"].lower() for p in json.loads(listed)}
    assert {"simcore", "numpy", "scipy"} <= names and not names & {"django", "celery", "channels"}
    evaluated = subprocess.run([str(engine_venv / "simcore"), "evaluate", "-"], input=json.dumps(SCENARIO),
                               capture_output=True, text=True, check=True, cwd="/")
    import simcore

    assert json.loads(evaluated.stdout) == json.loads(json.dumps(simcore.evaluate(SCENARIO)))  # the same engine


def test_the_notebook_example_runs_on_the_installed_engine(engine_venv):
    run = subprocess.run([str(engine_venv / "python"), str(ROOT / "docs" / "examples" / "notebook.py")],
                         capture_output=True, text=True, cwd="/")
    assert run.returncode == 0, run.stderr
    assert run.stdout.splitlines()[0].split() == ["nodes", "switches", "capex", "step", "(s)", "MFU"]


def test_the_project_installs_with_its_data_files_beside_the_engine(tmp_path):
    source = tmp_path / "src"
    shutil.copytree(ROOT, source, symlinks=True,
                    ignore=shutil.ignore_patterns(".git", ".venv", "var", "test-artifacts", "build", "dist",
                                                  "*.egg-info", "__pycache__", "node_modules"))
    bin_dir = _venv(tmp_path / "venv")
    _pip(bin_dir, "--no-deps", str(source / "engine"), str(source))

    def owned(distribution):
        shown = subprocess.run([str(bin_dir / "python"), "-m", "pip", "show", "-f", distribution],
                               capture_output=True, text=True, check=True).stdout
        return {line.strip() for line in shown.partition("Files:")[2].splitlines() if line.strip()}

    project, engine = owned("ai-cluster-planner"), owned("simcore")
    for expected in ("planner/catalog/data/plans/ff2-pcie-2zone.yaml", "frontend/templates/frontend/base.html",
                     "frontend/static/frontend/js/main.js", "config/settings/base.py"):
        assert expected in project
    assert "simcore/stages/scenario.py" in engine
    assert not {name for name in project & engine if not name.startswith("../")}  # no file owned twice
    assert (bin_dir / "simcore").exists()
