"""Errors the services raise for their callers to show: the API's exception handler maps each to
its HTTP answer (planner/api/errors.py), commands print them."""


class InputError(ValueError):
    """Bad input found by a service: ``errors`` maps each field to its reasons (HTTP 400)."""

    def __init__(self, errors: dict[str, list[str]]):
        self.errors = errors
        super().__init__("; ".join(f"{field}: {' '.join(reasons)}" for field, reasons in errors.items()))
