"""The OpenAPI schema's error answers: every operation documents the errors it can give, each an
RFC 9457 problem document (:mod:`planner.api.problems`); and nullable fields of any JSON made valid."""
from planner.api.problems import PROBLEM_MEDIA_TYPE

PROBLEM = {
    "type": "object",
    "description": "An RFC 9457 problem document: what went wrong (`detail`) and, for bad input, each bad field "
                   "(a dotted path for a scenario document's) with its reasons (`errors`; each also a member of "
                   "its own unless its name is one of RFC 9457's).",
    "required": ["type", "title", "status", "detail"],
    "properties": {
        "type": {"type": "string", "description": "about:blank: the status says what kind of problem it is"},
        "title": {"type": "string", "description": "the HTTP status's phrase"},
        "status": {"type": "integer"},
        "detail": {"type": "string"},
        "errors": {"type": "object", "description": "each bad field's reasons (a list of sentences, or a nested "
                                                    "field's own errors)",
                   "additionalProperties": {}},
        "feasible": {"type": "boolean", "description": "false: the plan cannot be built (with its reasons)"},
        "reasons": {"type": "array", "items": {"type": "string"}},
        "referenced_by": {"type": "array", "items": {"type": "string"}},
    },
    "additionalProperties": {"description": "a bad field's reasons, as in errors"},
}
ERRORS = {
    "400": "Bad input: each bad field with its reasons (nothing is stored).",
    "401": "Not signed in: give a token (`Authorization: Token <key>` or `Bearer <key>`) or a session.",
    "403": "Not allowed: the object is not yours, the token is read-only, or the account lacks the permission.",
    "404": "No such object visible to you.",
    "405": "Not a method this path takes: the Allow header lists those it does.",
    "409": "The object is still referenced by another (a delete), the same work is already under way (a "
           "kernel log being ingested into the twin), another request took the same name at the same moment (a "
           "create), or your sweeps' stored results have reached their quota (a sweep).",
    "412": "Changed since you read it: the If-Match you sent is not the object's ETag now (nothing is stored).",
    "413": "The upload or the request is larger than the server takes.",
    "415": "The body's media type is not one this operation reads (its request body's content types).",
    "429": "Too many requests: retry after the Retry-After header's seconds.",
    "503": "The server cannot take this now (its turns for engine work are taken, or the task queue is down): "
           "retry after the Retry-After header's seconds, where it gives one.",
}


def _applies(code: str, path: str, method: str, operation: dict) -> bool:
    if code in ("401", "403") and {} in operation.get("security", []):
        return False  # open to anonymous callers
    if code == "400":
        return method in ("post", "put", "patch") or bool(operation.get("parameters"))
    if code == "403":
        return method != "get" or "{" in path
    if code == "404":
        return "{" in path
    if code == "409":
        return method in ("delete", "post") or path.endswith("/ingest-log/")
    if code == "412":
        return method in ("put", "patch") and path.startswith(("/api/plans/{slug}/", "/api/workloads/{slug}/"))
    if code == "413":
        return method in ("post", "put", "patch")
    if code == "415":
        return "requestBody" in operation
    return code in ("401", "405", "429", "503")


def document_errors(result, generator, request, public):
    """A drf-spectacular postprocessing hook: adds the error answers each operation can give, with
    the Problem schema, where the view did not document them itself, and the Problem schema to the
    error answers a view described in words only."""
    result.setdefault("components", {}).setdefault("schemas", {})["Problem"] = PROBLEM
    reference = {PROBLEM_MEDIA_TYPE: {"schema": {"$ref": "#/components/schemas/Problem"}}}
    for path, methods in result.get("paths", {}).items():
        for method, operation in methods.items():
            responses = operation.setdefault("responses", {})
            for code, description in ERRORS.items():
                if code not in responses and _applies(code, path, method, operation):
                    responses[code] = {"description": description, "content": reference}
            for code, response in responses.items():
                if code[0] in "45" and "content" not in response:
                    response["content"] = reference
    return result


def _schemas(node):
    """Every object in the document, each before what it holds (so a change made to one is walked)."""
    if isinstance(node, dict):
        yield node
        for value in list(node.values()):
            yield from _schemas(value)
    elif isinstance(node, list):
        for value in node:
            yield from _schemas(value)


def any_of_for_any(result, generator, request, public):
    """A drf-spectacular postprocessing hook: a nullable field of any JSON (``oneOf: [{}, {"type":
    "null"}]`` as drf-spectacular writes it) takes ``anyOf``, since null matches both of ``oneOf``'s
    schemas and so none of its values would be valid."""
    for node in _schemas(result):
        if "oneOf" in node and {} in node["oneOf"]:
            node["anyOf"] = node.pop("oneOf")
    return result


def nullable_as_3_1(result, generator, request, public):
    """A drf-spectacular postprocessing hook: OpenAPI 3.0's ``nullable: true`` (which DRF's own
    pagination schema writes) as 3.1 says it, null among the types (or ``anyOf`` with null where the
    schema has no one type), since a 3.1 document has no ``nullable``."""
    for node in _schemas(result):
        if not node.pop("nullable", False):
            continue
        if isinstance(node.get("type"), str):
            node["type"] = [node["type"], "null"]
        else:
            inner = {key: node.pop(key) for key in list(node) if key not in ("description", "title")}
            node["anyOf"] = [inner, {"type": "null"}]
    return result
