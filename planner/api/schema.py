"""The OpenAPI schema's error answers: every operation documents the errors it can give, each with
the one error body the API writes (``planner.api.errors``): ``detail`` for a request as a whole,
or each bad field with its reasons."""

ERROR = {
    "type": "object",
    "description": "An error: `detail` says what went wrong with the request as a whole; a request with bad "
                   "fields names each field (a dotted path for a scenario document's) with its reasons.",
    "properties": {"detail": {"type": "string"}},
    "additionalProperties": {"description": "a bad field's reasons (a list of sentences, or a nested field's own "
                                            "errors), or what an impossible plan reports (feasible, reasons)"},
}
ERRORS = {
    "400": "Bad input: each bad field with its reasons (nothing is stored).",
    "401": "Not signed in: give a token (`Authorization: Token <key>` or `Bearer <key>`) or a session.",
    "403": "Not allowed: the object is not yours, the token is read-only, or the account lacks the permission.",
    "404": "No such object visible to you.",
    "409": "The object is still referenced by another (a delete).",
    "413": "The upload or the request is larger than the server takes.",
    "429": "Too many requests: retry after the Retry-After header's seconds.",
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
        return method == "delete"
    if code == "413":
        return method in ("post", "put", "patch")
    return code in ("401", "429")


def document_errors(result, generator, request, public):
    """A drf-spectacular postprocessing hook: adds the error answers each operation can give, with
    the shared Error schema, where the view did not document them itself."""
    result.setdefault("components", {}).setdefault("schemas", {})["Error"] = ERROR
    reference = {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}
    for path, methods in result.get("paths", {}).items():
        for method, operation in methods.items():
            responses = operation.setdefault("responses", {})
            for code, description in ERRORS.items():
                if code not in responses and _applies(code, path, method, operation):
                    responses[code] = {"description": description, "content": reference}
    return result
