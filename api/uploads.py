"""Reading a posted bundle: the body as ``application/gzip`` or the multipart field ``bundle``."""

from django.conf import settings
from rest_framework.exceptions import APIException, ErrorDetail, ValidationError

from diagnoses.bundle_store import BundleRejected, BundleTooLarge, LimitedReader

GZIP_TYPES = ("application/gzip", "application/x-gzip", "application/x-tar+gzip", "application/octet-stream")


class Conflict(APIException):
    status_code = 409
    default_detail = "Already stored."
    default_code = "duplicate"


def bundle_stream(request):
    """A binary stream of the posted ``.tar.gz``, limited to ``FAULTLINE_UPLOAD_MAX_BYTES``."""
    limit = settings.FAULTLINE_UPLOAD_MAX_BYTES
    too_large = f"the upload is larger than {limit:,} bytes"
    media_type = request.content_type.split(";")[0].strip().lower()
    if media_type in GZIP_TYPES:
        length = request.META.get("CONTENT_LENGTH") or "0"
        if length.isdigit() and int(length) > limit:
            raise BundleTooLarge(too_large)
        if request.stream is None:
            raise BundleRejected("the upload is empty (post the .tar.gz as the request body)")
        return LimitedReader(request.stream, limit, too_large)
    if media_type == "multipart/form-data":
        upload = request.data.get("bundle")
        if not hasattr(upload, "read"):
            raise BundleRejected("the multipart field 'bundle' must hold the .tar.gz file")
        if upload.size > limit:
            raise BundleTooLarge(too_large)
        return upload
    raise BundleRejected(
        f"unsupported content type {media_type or 'none'!r}: post the .tar.gz as application/gzip "
        "or as the multipart field 'bundle'"
    )


def rejected(exc: BundleRejected) -> ValidationError:
    return ValidationError({"bundle": [ErrorDetail(str(exc), code=exc.code)]})
