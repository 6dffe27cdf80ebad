"""The Content-Security-Policy header (Django 5.2 has none of its own): every response carries
``CONTENT_SECURITY_POLICY``. The pages keep it: scripts and styles come from static/, none inline."""

from django.conf import settings


class ContentSecurityPolicy:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        if settings.CONTENT_SECURITY_POLICY:
            response.headers.setdefault("Content-Security-Policy", settings.CONTENT_SECURITY_POLICY)
        return response
