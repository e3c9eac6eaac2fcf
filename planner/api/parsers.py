"""JSON bodies with a bounded nesting depth: a scenario document is a few levels deep, and a body
nested tens of thousands deep would otherwise end in a RecursionError (a 500) in the decoder or in
whatever walks it next."""
from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser

MAX_JSON_DEPTH = 32


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
    """DRF's JSON parser, answering 400 for a body nested deeper than MAX_JSON_DEPTH levels."""

    def parse(self, stream, media_type=None, parser_context=None):
        try:
            data = super().parse(stream, media_type, parser_context)
        except RecursionError:
            raise ParseError(f"JSON nested deeper than {MAX_JSON_DEPTH} levels") from None
        if json_depth(data) > MAX_JSON_DEPTH:
            raise ParseError(f"JSON nested deeper than {MAX_JSON_DEPTH} levels")
        return data
