"""What changed since an attempt's job last worked: the comparison with its last good attempt (the nodes, the software
versions with the changed ones first, the time to the first error, the log templates the good one never printed).
``/api/v1/attempts/<id>/changes`` returns the same."""

from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.views.decorators.http import require_GET

from diagnoses import selectors as diagnoses_selectors
from engine.bundle import BundleError
from pages import selectors
from web.htmx import render_page


@login_required
@require_GET
def attempt_changes(request, pk: int):
    attempt = selectors.attempt_page(pk)
    if attempt is None:
        raise Http404("no such attempt")
    context = {"attempt": attempt, "changes": None, "problem": ""}
    try:
        context["changes"] = diagnoses_selectors.attempt_changes(attempt)
    except (diagnoses_selectors.NotGathered, BundleError) as exc:
        context["problem"] = str(exc)
    return render_page(request, "pages/attempt_changes.html", context)
