"""Uploading a bundle from the browser: the page with its form, and the POST that stores the attempt through the same
service and the same checks as ``POST /api/v1/attempts`` (the same refusals, word for word), then leads to the new
attempt's page, where its diagnosis shows once analysed.

The page's script (``static/js/upload.js``) sends the form itself, to show the upload's progress, and asks for JSON
(``Accept: application/json``): 202 with the page's URL, or the API's error format (400, 409 with the stored attempt's
page). Without the script the form posts as any form does: a redirect, or the page again with the refusal.
"""

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods

from diagnoses import bundle_store
from diagnoses.services import attempts

UPLOAD_PERMISSION = "diagnoses.add_attempt"


@login_required
@require_http_methods(["GET", "POST"])
def attempt_upload(request):
    if not request.user.has_perm(UPLOAD_PERMISSION):
        raise PermissionDenied("only triagers upload bundles")
    if request.method == "GET":
        return _page(request)
    wants_json = "application/json" in request.headers.get("Accept", "")
    try:
        attempt = attempts.attempt_ingest_archive(
            stream=bundle_store.uploaded_file(request.FILES.get("bundle")), history=request.POST.get("history") == "on"
        )
    except bundle_store.BundleRejected as exc:
        return _refused(request, wants_json, status=400, code=exc.code, message=str(exc), field="bundle")
    except attempts.DuplicateAttempt as exc:
        stored = reverse("pages:attempt-detail", args=[exc.attempt.pk])
        return _refused(request, wants_json, status=409, code="duplicate", message=str(exc), stored=stored)
    page = reverse("pages:attempt-detail", args=[attempt.pk])
    number = f" attempt {attempt.number}" if attempt.number else ""
    messages.success(
        request,
        f"Job {attempt.job.job_id}{number} on {attempt.cluster.name} stored; its analysis is {attempt.analysis_state}.",
    )
    if wants_json:
        body = {
            "id": attempt.pk,
            "page_url": request.build_absolute_uri(page),
            "analysis_state": attempt.analysis_state,
        }
        return JsonResponse(body, status=202, headers={"Location": page})
    return redirect(page)


def _page(request, *, problem: str = "", stored: str = "", status: int = 200):
    context = {"max_bytes": settings.FAULTLINE_UPLOAD_MAX_BYTES, "too_large": bundle_store.upload_too_large(),
               "problem": problem, "stored": stored, "history_days": settings.FAULTLINE_HISTORY_DAYS}  # fmt: skip
    return render(request, "pages/upload.html", context, status=status)


def _refused(request, wants_json: bool, *, status: int, code: str, message: str, field=None, stored: str = ""):
    """The refusal in the API's error format (and the stored attempt's page, for a duplicate), or the page again."""
    if wants_json:
        body = {"error": {"code": code, "message": message, "field": field}}
        if stored:
            body["stored_url"] = request.build_absolute_uri(stored)
        return JsonResponse(body, status=status)
    return _page(request, problem=message, stored=stored, status=status)
