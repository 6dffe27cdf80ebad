"""The API's conventions: pagination and the one error format every endpoint answers with.

An error is ``{"error": {"code": "...", "message": "...", "field": "..." | null}}``: ``code`` is
machine-readable (``invalid``, ``not_authenticated``, ``permission_denied``, ``not_found``,
``duplicate``, ...), ``message`` names the problem, ``field`` the request field at fault, if any.
"""

from django.core.exceptions import PermissionDenied
from django.http import Http404
from rest_framework import exceptions
from rest_framework.exceptions import ValidationError
from rest_framework.pagination import PageNumberPagination
from rest_framework.views import exception_handler as drf_exception_handler

ERROR_SCHEMA = {
    "type": "object",
    "properties": {
        "error": {
            "type": "object",
            "properties": {
                "code": {"type": "string"},
                "message": {"type": "string"},
                "field": {"type": "string", "nullable": True},
            },
            "required": ["code", "message", "field"],
        }
    },
    "required": ["error"],
}
DOCUMENTED_ERRORS = {
    "400": "Bad request: the message names the problem, `field` the field at fault",
    "401": "Not authenticated",
    "403": "Not allowed for this user's role",
    "404": "Not found",
}


class Pagination(PageNumberPagination):
    page_size_query_param = "page_size"
    max_page_size = 500


def exception_handler(exc, context):
    if isinstance(exc, Http404):
        exc = exceptions.NotFound()
    elif isinstance(exc, PermissionDenied):
        exc = exceptions.PermissionDenied()
    response = drf_exception_handler(exc, context)
    if response is None:
        return None
    if isinstance(exc, ValidationError):
        field, message, code = _first_problem(exc.detail)
    else:
        field, message = None, str(exc.detail)
        code = getattr(exc.detail, "code", None) or exc.default_code
    response.data = {"error": {"code": code, "message": message, "field": field}}
    return response


def _first_problem(detail, path: str = "") -> tuple[str | None, str, str]:
    """The first (field path, message, code) of a validation error's nested detail."""
    if isinstance(detail, dict):
        for key, value in detail.items():
            name = None if key == "non_field_errors" else f"{path}.{key}" if path else str(key)
            field, message, code = _first_problem(value, name or path)
            return field or name, message, code
    if isinstance(detail, list) and detail:
        return _first_problem(detail[0], path)
    return path or None, str(detail), getattr(detail, "code", None) or "invalid"


def document_errors(result, generator, request, public):
    """drf-spectacular hook: every operation documents the error format for its error statuses
    (400, 401, 403, 404, and any other 4xx a view declares without a body)."""
    result.setdefault("components", {}).setdefault("schemas", {})["Error"] = ERROR_SCHEMA
    reference = {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}
    for operations in result.get("paths", {}).values():
        for operation in operations.values():
            responses = operation.setdefault("responses", {})
            for status, description in DOCUMENTED_ERRORS.items():
                responses.setdefault(status, {"description": description, "content": reference})
            for status, response in responses.items():
                if status.startswith("4"):
                    response.setdefault("content", reference)
    return result
