"""Answers during an outage (``diagnoses.outages``): the database down or restarting, the object store unreachable,
the bundle store's disk full. The API answers its error format, ``{"error": {"code": "database_unavailable", ...}}``,
with 503 (507 for a full store) and ``Retry-After``; a page answers a short page of its own that needs no database.
Nothing the request began is kept: uploads are staged, and their rows written in one transaction."""

import logging

from django.http import HttpResponse, JsonResponse
from django.template.loader import render_to_string

from diagnoses.outages import outage_of

logger = logging.getLogger(__name__)


class Outages:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_exception(self, request, exception):
        outage = outage_of(exception)
        if outage is None:
            return None
        logger.warning("%s %s: %s (%s)", request.method, request.path, outage.code, exception)
        if request.path.startswith("/api/"):
            body = {"error": {"code": outage.code, "message": outage.message, "field": None}}
            response = JsonResponse(body, status=outage.status)
        else:
            response = HttpResponse(render_to_string("503.html", {"outage": outage}), status=outage.status)
        response["Retry-After"] = str(outage.retry_after)
        return response
