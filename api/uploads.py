"""Reading a posted bundle: the body as ``application/gzip`` or the multipart field ``bundle``, and whether it asks for
the store's history."""

import time

from django.conf import settings
from rest_framework.exceptions import APIException, ErrorDetail, ValidationError
from rest_framework.fields import BooleanField

from diagnoses.bundle_store import BundleRejected, BundleTooLarge, LimitedReader, upload_too_large, uploaded_file

GZIP_TYPES = ("application/gzip", "application/x-gzip", "application/x-tar+gzip", "application/octet-stream")


class TooSlow(APIException):
    status_code = 422
    default_detail = "The bundle takes too long to analyse here: store it (POST /api/v1/attempts) instead."
    default_code = "too_slow"


class Deadline:
    """The engine's interrupt hook for a request: raises ``TooSlow`` once ``seconds`` have passed."""

    def __init__(self, seconds: float):
        self.seconds = seconds
        self.end = time.monotonic() + seconds

    def __call__(self) -> None:
        if time.monotonic() > self.end:
            raise TooSlow(
                f"the analysis took longer than {self.seconds:g} s (FAULTLINE_ANALYZE_TIME_LIMIT): store the bundle "
                "with POST /api/v1/attempts to have it analysed by a worker"
            )


class Conflict(APIException):
    status_code = 409
    default_detail = "Already stored."
    default_code = "duplicate"


def bundle_stream(request):
    """A binary stream of the posted ``.tar.gz``, limited to ``FAULTLINE_UPLOAD_MAX_BYTES``."""
    limit = settings.FAULTLINE_UPLOAD_MAX_BYTES
    too_large = upload_too_large()
    media_type = request.content_type.split(";")[0].strip().lower()
    if media_type in GZIP_TYPES:
        length = request.META.get("CONTENT_LENGTH") or "0"
        if length.isdigit() and int(length) > limit:
            raise BundleTooLarge(too_large)
        if _chunked(request):  # no Content-Length: the server ends the body (PEP 3333's wsgi.input_terminated)
            return LimitedReader(request.META["wsgi.input"], limit, too_large)
        if request.stream is None:
            raise BundleRejected("the upload is empty (post the .tar.gz as the request body)")
        return LimitedReader(request.stream, limit, too_large)
    if media_type == "multipart/form-data":
        return uploaded_file(request.data.get("bundle"))
    raise BundleRejected(
        f"unsupported content type {media_type or 'none'!r}: post the .tar.gz as application/gzip "
        "or as the multipart field 'bundle'"
    )


def history_wanted(request) -> bool:
    """The ``history`` query parameter (``true``/``false``, default false): whether a bundle without ``history/`` gets
    the store's history of its nodes and job written into it (docs/bundles.md, "History")."""
    value = request.query_params.get("history", "false")
    try:
        return BooleanField().to_internal_value(value)
    except ValidationError:
        raise ValidationError({"history": [f"must be true or false, not {value[:40]!r}"]}) from None


def _chunked(request) -> bool:
    """A body sent with ``Transfer-Encoding: chunked`` that the WSGI server de-chunks and ends (gunicorn does)."""
    encoding = request.META.get("HTTP_TRANSFER_ENCODING", "").lower()
    return "chunked" in encoding and bool(request.META.get("wsgi.input_terminated"))


def rejected(exc: BundleRejected) -> ValidationError:
    return ValidationError({"bundle": [ErrorDetail(str(exc), code=exc.code)]})
