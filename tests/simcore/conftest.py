"""The engine's tests run with every warning an error (a deprecation in the engine fails them on the
Python that announces it, as the package's test run on 3.11 to 3.13 does)."""
import copy
from pathlib import Path

import pytest

from simcore.tools.references import FF_2ZONE, LLAMA_13B


@pytest.fixture
def ff_cluster():
    """The Fire-Flyer 2 cluster as the reference cases describe it (a fresh copy per test)."""
    return copy.deepcopy(FF_2ZONE)


@pytest.fixture
def llama_workload():
    return copy.deepcopy(LLAMA_13B)


HERE = Path(__file__).resolve().parent


def pytest_collection_modifyitems(config, items):
    for item in items:
        if Path(str(item.fspath)).resolve().is_relative_to(HERE):
            item.add_marker(pytest.mark.filterwarnings("error"))
