"""The engine as a package: `python -m build engine` makes an sdist and a wheel that `twine check
--strict` passes, the sdist holding the licence, the notice, the README and the engine's tests; the
wheel in a fresh virtual environment gives the `simcore` command and runs the notebook example,
and the sdist's own tests pass on it away from the checkout; `pip install ./engine .` installs the
whole project with its catalogue, templates and static files, each file owned by one distribution,
and its own distributions pass `twine check --strict` too."""
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


# What engine/ links to: the package, the licence and notice, the tests and what they read.
ENGINE_SOURCES = ("simcore", "engine", "LICENSE", "NOTICE", "tests/__init__.py", "tests/simcore", "tests/data",
                  "docs/scenario-format.md")


@pytest.fixture(scope="module")
def tools(tmp_path_factory) -> Path:
    """A virtual environment with build and twine."""
    bin_dir = _venv(tmp_path_factory.mktemp("tools") / "venv")
    _pip(bin_dir, "build", "twine")
    return bin_dir


def _build(tools: Path, source: Path, outdir: Path) -> Path:
    """Build ``source``'s sdist and wheel; setuptools warns of no data folder left out of the packages."""
    built = subprocess.run([str(tools / "python"), "-m", "build", str(source), "--outdir", str(outdir)],
                           check=True, capture_output=True, text=True, timeout=900)
    assert "absent from the `packages` configuration" not in built.stdout + built.stderr, built.stderr[-3000:]
    return outdir


def _twine_check(tools: Path, dist: Path) -> str:
    checked = subprocess.run([str(tools / "twine"), "check", "--strict", *map(str, sorted(dist.iterdir()))],
                             capture_output=True, text=True, timeout=300)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    return checked.stdout


@pytest.fixture(scope="module")
def engine_dist(tmp_path_factory, tools) -> Path:
    """`python -m build engine` on a copy of the checkout's engine and what it links to: the folder
    holding the sdist and the wheel."""
    work = tmp_path_factory.mktemp("engine-build")
    for part in ENGINE_SOURCES:
        _copy(part, work / "src")
    return _build(tools, work / "src" / "engine", work / "dist")


@pytest.fixture(scope="module")
def engine_venv(tmp_path_factory, engine_dist):
    """A fresh environment with only the engine's wheel (and NumPy)."""
    bin_dir = _venv(tmp_path_factory.mktemp("engine") / "venv")
    _pip(bin_dir, str(next(engine_dist.glob("*.whl"))))
    return bin_dir


def test_the_build_gives_an_sdist_and_a_wheel_of_the_package_and_leaves_one_source(engine_dist, tools):
    sdist, wheel = next(engine_dist.glob("simcore-*.tar.gz")), next(engine_dist.glob("simcore-*.whl"))
    import simcore

    assert sdist.name == f"simcore-{simcore.__version__}.tar.gz"
    top = f"simcore-{simcore.__version__}"
    with tarfile.open(sdist) as archive:
        names = set(archive.getnames())
    assert {f"{top}/{name}" for name in ("simcore/stages/scenario.py", "simcore/py.typed", "LICENSE", "NOTICE",
                                         "README.md", "tests/simcore/test_training.py", "tests/__init__.py",
                                         "docs/scenario-format.md")} <= names
    assert not any("__pycache__" in name for name in names)
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        metadata = archive.read(f"simcore-{simcore.__version__}.dist-info/METADATA").decode()
    assert {"simcore/__init__.py", "simcore/formulas/reliability.py", "simcore/tools/references.py",
            "simcore/py.typed", "simcore/data/reference_cases.yaml", "simcore/data/reference_cases.schema.json",
            "simcore/data/fitted_constants.yaml", "simcore/data/fitted_constants.schema.json",
            f"simcore-{simcore.__version__}.dist-info/licenses/LICENSE"} <= names
    assert "License-Expression: Apache-2.0" in metadata and "Classifier: Typing :: Typed" in metadata
    assert "Description-Content-Type: text/markdown" in metadata and "simcore validate --known-misses" in metadata
    assert "PASSED" in _twine_check(tools, engine_dist)
    for linked in ("simcore", "LICENSE", "NOTICE", "tests/simcore", "docs/scenario-format.md"):
        assert (ROOT / "engine" / linked).is_symlink(), linked  # the repository's files, not copies
    assert {path.name for path in (ROOT / "engine").iterdir()} <= {
        "pyproject.toml", "MANIFEST.in", "README.md", "LICENSE", "NOTICE", "simcore", "tests", "docs", "build",
        "dist", "simcore.egg-info"}


def test_the_engine_tests_pass_on_the_installed_sdist_away_from_the_checkout(tmp_path, engine_dist):
    """The sdist's own tests (and the data and docs they read), taken out of it, run against the
    sdist installed with its pandas and trace extras in a fresh environment: nothing comes from the
    repository."""
    from importlib.metadata import version

    sdist = next(engine_dist.glob("*.tar.gz"))
    bin_dir = _venv(tmp_path / "venv")
    _pip(bin_dir, f"simcore[pandas,trace] @ {sdist.as_uri()}",
         *(f"{name}=={version(name)}" for name in ("pytest", "hypothesis", "scipy", "ijson")))
    with tarfile.open(sdist) as archive:
        archive.extractall(tmp_path / "sdist", filter="data")
    unpacked = next((tmp_path / "sdist").iterdir())
    for part in ("tests", "docs"):  # not its simcore/, which would come before the installed package
        shutil.copytree(unpacked / part, tmp_path / "away" / part)
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
    lines = run.stdout.splitlines()
    assert lines[0].split() == ["nodes", "switches", "capex", "step", "(s)", "MFU"]
    assert lines[1].split()[:3] == ["200", "16", "1847.2"]  # 200 nodes at 9.0 and 16 switches at 2.95


def test_the_project_installs_with_its_data_files_beside_the_engine(tmp_path, tools):
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
    project_dist = _build(tools, source, tmp_path / "dist")
    assert "PASSED" in _twine_check(tools, project_dist)
    with zipfile.ZipFile(next(project_dist.glob("*.whl"))) as archive:
        assert any(name.endswith(".dist-info/licenses/LICENSE") for name in archive.namelist())
