"""JSON bodies with a bounded nesting depth and text that is text: a scenario document is a few
levels deep, and a body nested tens of thousands deep would otherwise end in a RecursionError (a
500) in the decoder or in whatever walks it next; a lone surrogate (``"\\ud800"``) decodes to a
string no database or encoder accepts, so it is refused naming where it is."""
import re

from rest_framework.exceptions import ParseError, ValidationError
from rest_framework.parsers import JSONParser

MAX_JSON_DEPTH = 32
LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def lone_surrogate_path(value) -> str | None:
    """Where the first string (a value or a key) holding a lone surrogate is in a decoded JSON value,
    as a dotted path (``items.0.part_kind``; "" for the value itself), or None. JSON decodes a valid
    pair to one character, so any surrogate left is alone."""
    stack = [(value, "")]
    while stack:
        item, path = stack.pop()
        if isinstance(item, str):
            if LONE_SURROGATE.search(item):
                return path
        elif isinstance(item, dict):
            for key, child in item.items():
                child_path = f"{path}.{key}" if path else str(key)
                if LONE_SURROGATE.search(key):
                    return path or "non_field_errors"
                stack.append((child, child_path))
        elif isinstance(item, list):
            stack.extend((child, f"{path}.{i}" if path else str(i)) for i, child in enumerate(item))
    return None


def json_depth(value) -> int:
    """How deeply arrays and objects nest in a decoded JSON value (iteratively: no recursion)."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, depth = stack.pop()
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else None
        if children is None:
            continue
        deepest = max(deepest, depth)
        if deepest > MAX_JSON_DEPTH:
            break
        stack.extend((child, depth + 1) for child in children)
    return deepest


class BoundedJSONParser(JSONParser):
    """DRF's JSON parser, answering 400 for a body nested deeper than MAX_JSON_DEPTH levels or holding
    a lone surrogate (naming its field)."""

    def parse(self, stream, media_type=None, parser_context=None):
        try:
            data = super().parse(stream, media_type, parser_context)
        except RecursionError:
            raise ParseError(f"JSON nested deeper than {MAX_JSON_DEPTH} levels") from None
        if json_depth(data) > MAX_JSON_DEPTH:
            raise ParseError(f"JSON nested deeper than {MAX_JSON_DEPTH} levels")
        path = lone_surrogate_path(data)
        if path is not None:
            raise ValidationError({path or "non_field_errors": ["holds a lone UTF-16 surrogate (such as \\ud800), "
                                                                 "which is not text"]})
        return data
