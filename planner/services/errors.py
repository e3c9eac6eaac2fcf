"""Errors the services raise for their callers to show: the API's exception handler maps each to
its HTTP answer (planner/api/errors.py), commands print them."""


class InputError(ValueError):
    """Bad input found by a service: ``errors`` maps each field to its reasons (HTTP 400)."""

    def __init__(self, errors: dict[str, list[str]]):
        self.errors = errors
        super().__init__("; ".join(f"{field}: {' '.join(reasons)}" for field, reasons in errors.items()))


class QuotaExceeded(InputError):
    """A user's quota would be passed (``field`` names the setting): HTTP 429 while it frees itself
    (points queued, which finish), 409 where the user must act (bytes stored, which they delete)."""

    def __init__(self, field: str, reason: str, status: int):
        super().__init__({field: [reason]})
        self.status = status
