"""Engine services the pages share."""
from functools import lru_cache

from simcore.references import validate


@lru_cache(maxsize=1)
def engine_validation() -> tuple[list[dict], dict[str, dict]]:
    """Every reference case with the engine's prediction and error (``simcore.references.validate``).

    The cases and the engine's parameters are fixed for a running process, so the result is
    computed once."""
    return validate()
