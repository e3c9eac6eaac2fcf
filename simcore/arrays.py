"""Arrays shared by the engine: input checks (broadcastable, finite, in range), labels, and conversion to JSON."""
import math

import numpy as np

from simcore.errors import ScenarioError

# The range every input number must fall in, so that the engine's products and quotients stay finite
# in double precision: no magnitude above 1e18 (a quintillion bytes, FLOPs or seconds is past any
# cluster's), and no positive number below 1e-12 (1 / 1e-12 s is still a finite rate).
MAX_MAGNITUDE = 1e18
MIN_POSITIVE = 1e-12


def as_array(value, field: str, *, positive: bool = False, non_negative: bool = False,
             at_most: float | None = None, at_least: float | None = None, integer: bool = False) -> np.ndarray:
    """``value`` as a float array, or a ScenarioError naming ``field`` when it is not valid."""
    if isinstance(value, float | int) and not isinstance(value, bool):
        return _checked_scalar(float(value), field, positive, non_negative, at_most, at_least, integer)
    if isinstance(value, np.ndarray) and value.ndim == 0:
        return _checked_scalar(float(value), field, positive, non_negative, at_most, at_least, integer)
    try:
        array = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise ScenarioError(field, f"must be a number or an array of numbers, got {value!r}") from None
    if not np.all(np.isfinite(array)):
        raise ScenarioError(field, "must be finite (no NaN or infinity)")
    if np.any(np.abs(array) > MAX_MAGNITUDE):
        raise ScenarioError(field, f"must be at most {MAX_MAGNITUDE:g} in size (the engine's range)")
    if positive and np.any(array <= 0):
        raise ScenarioError(field, "must be greater than zero")
    if np.any((array != 0) & (np.abs(array) < MIN_POSITIVE)):
        raise ScenarioError(field, f"must be zero or at least {MIN_POSITIVE:g} in size (the engine's range)")
    if non_negative and np.any(array < 0):
        raise ScenarioError(field, "must be zero or more")
    if at_most is not None and np.any(array > at_most):
        raise ScenarioError(field, f"must be at most {at_most}")
    if at_least is not None and np.any(array < at_least):
        raise ScenarioError(field, f"must be at least {at_least}")
    if integer and np.any(array != np.round(array)):
        raise ScenarioError(field, "must be a whole number")
    return array


def _checked_scalar(number: float, field, positive, non_negative, at_most, at_least, integer) -> np.ndarray:
    """The checks of :func:`as_array` on one number, without array reductions."""
    if number != number or number in (float("inf"), float("-inf")):
        raise ScenarioError(field, "must be finite (no NaN or infinity)")
    if abs(number) > MAX_MAGNITUDE:
        raise ScenarioError(field, f"must be at most {MAX_MAGNITUDE:g} in size (the engine's range)")
    if positive and number <= 0:
        raise ScenarioError(field, "must be greater than zero")
    if number != 0 and abs(number) < MIN_POSITIVE:
        raise ScenarioError(field, f"must be zero or at least {MIN_POSITIVE:g} in size (the engine's range)")
    if non_negative and number < 0:
        raise ScenarioError(field, "must be zero or more")
    if at_most is not None and number > at_most:
        raise ScenarioError(field, f"must be at most {at_most}")
    if at_least is not None and number < at_least:
        raise ScenarioError(field, f"must be at least {at_least}")
    if integer and number != round(number):
        raise ScenarioError(field, "must be a whole number")
    return np.float64(number)


_CONDITION_TYPES = frozenset({bool, np.bool_})
_FLOAT_TYPES = frozenset({float, np.float64})
_NUMBER_TYPES = _FLOAT_TYPES | {int, np.int64}


def where(condition, if_true, if_false):
    """``np.where(condition, if_true, if_false)``; on one scenario point's plain numbers a branch,
    giving a float64 scalar where either value is a float (np.where there costs about 2 us, some
    twenty times a branch, and is a third of the engine's calls on one point). Anything else, an
    array or two integers, goes to np.where."""
    if (type(condition) in _CONDITION_TYPES and type(if_true) in _NUMBER_TYPES and type(if_false) in _NUMBER_TYPES
            and (type(if_true) in _FLOAT_TYPES or type(if_false) in _FLOAT_TYPES)):
        return np.float64(if_true if condition else if_false)
    return np.where(condition, if_true, if_false)


def broadcast(**arrays: np.ndarray) -> dict[str, np.ndarray]:
    """Broadcast named arrays together, naming the fields whose shapes do not fit."""
    try:
        shaped = np.broadcast_arrays(*arrays.values())
    except ValueError:
        shapes = ", ".join(f"{name} {np.shape(a)}" for name, a in arrays.items())
        raise ScenarioError(next(iter(arrays)), f"shapes do not broadcast together: {shapes}") from None
    return dict(zip(arrays, shaped))


def binding(labels: tuple[str, ...], *bounds) -> tuple[np.ndarray, np.ndarray]:
    """The smallest of several bounds and the index (into ``labels``) of the one that binds.

    Ties go to the earlier bound. The loop runs over the few constraints, never over scenarios.
    """
    shape = np.broadcast_shapes(*(np.shape(b) for b in bounds))
    if not shape:  # one scenario point: the same rule on plain numbers
        values = [float(b) for b in bounds]
        position = min(range(len(values)), key=values.__getitem__)
        return np.array(values[position]), np.array(position, np.intp)
    best = np.broadcast_to(np.asarray(bounds[0], float), shape)
    index = np.zeros(shape, np.intp)
    for position, bound in enumerate(bounds[1:], start=1):
        smaller = bound < best
        best = np.where(smaller, bound, best)
        index = np.where(smaller, position, index)
    return best, index


def label(labels: tuple[str, ...], index: np.ndarray):
    """Label(s) for binding-constraint indices: a string for a scalar, an array otherwise."""
    index = np.asarray(index)
    names = np.asarray(labels, dtype=object)
    if index.ndim == 0:
        return str(names[index.item()])
    if index.size == 0 or np.any(index != index.flat[0]):
        return names[index]
    return np.broadcast_to(np.array(names[index.flat[0]], dtype=object), index.shape)  # one label: a view


# Weights of the sum that groups points (the golden ratio's multiples, each in [1, 2)).
_POINT_KEY_STEP = (5 ** 0.5 - 1) / 2


def distinct_points(columns: list[np.ndarray], most_share: float = 0.25):
    """(the distinct points of equal-length 1-D ``columns`` as a (columns, distinct points) table,
    each point's index among them) when there are at most ``most_share`` of the points, else None.
    Points are grouped by a weighted sum of their values and every point is then checked equal to
    its group's first: a collision of two sums, a NaN or an infinity gives None, never a wrong
    grouping. One product, one sort of the sums and one comparison."""
    table = np.array(columns, dtype=float)
    weights = 1.0 + np.modf(np.arange(1, len(columns) + 1) * _POINT_KEY_STEP)[0]
    _, first, inverse = np.unique(weights @ table, return_index=True, return_inverse=True)
    if len(first) > most_share * table.shape[1]:
        return None
    distinct = table[:, first]
    if not np.array_equal(distinct[:, inverse], table):
        return None
    return distinct, inverse


def to_json(value):
    """Arrays to lists, 0-d arrays and NumPy scalars to Python numbers, NaN/inf to None."""
    kind = type(value)
    if kind is dict:
        return {k: to_json(v) for k, v in value.items()}
    if kind is np.ndarray:
        if value.ndim == 0:
            return _finite_or_none(value.item())
        if value.dtype.kind == "f" and not np.all(np.isfinite(value)):
            return np.where(np.isfinite(value), value, None).tolist()
        return value.tolist()
    if kind is list or kind is tuple:
        return [to_json(v) for v in value]
    if isinstance(value, np.generic):
        return _finite_or_none(value.item())
    return _finite_or_none(value)


def _finite_or_none(value):
    return None if type(value) is float and not math.isfinite(value) else value
