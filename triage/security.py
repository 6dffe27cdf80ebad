"""The Content-Security-Policy header (Django 5.2 has none of its own): every response carries
``CONTENT_SECURITY_POLICY``. The pages keep it: scripts and styles come from static/, none inline. Under gunicorn no
``Server`` header names the software (``quiet_server_header``)."""

import sys

from django.conf import settings


class ContentSecurityPolicy:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        if settings.CONTENT_SECURITY_POLICY:
            response.headers.setdefault("Content-Security-Policy", settings.CONTENT_SECURITY_POLICY)
        return response


def quiet_server_header() -> None:
    """Under gunicorn (which has no setting for it), leave out the ``Server: gunicorn`` line it writes before every
    answer's headers: the software and its version are nothing a client needs."""
    responses = sys.modules.get("gunicorn.http.wsgi")
    if responses is None or getattr(responses.Response.default_headers, "quiet", False):
        return
    written = responses.Response.default_headers

    def default_headers(self):
        return [line for line in written(self) if not line.lower().startswith("server:")]

    default_headers.quiet = True
    responses.Response.default_headers = default_headers
