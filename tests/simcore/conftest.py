import copy

import pytest

from simcore.tools.references import FF_2ZONE, LLAMA_13B


@pytest.fixture
def ff_cluster():
    """The Fire-Flyer 2 cluster as the reference cases describe it (a fresh copy per test)."""
    return copy.deepcopy(FF_2ZONE)


@pytest.fixture
def llama_workload():
    return copy.deepcopy(LLAMA_13B)
