"""The twin services' errors."""
from planner.services.errors import InputError


class StaleTwin(RuntimeError):
    """The twin was changed by someone else (an injection) since this copy was loaded."""


class TwinInputError(InputError):
    """Bad twin input: ``errors`` maps a field to its reasons (answered as HTTP 400)."""
