"""Regression cases: the stored cases and the reviewed attempts that could become one, promoting one, and a
revision's results on every case."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required, permission_required
from django.http import Http404
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from rules import selectors
from workbench import selectors as workbench_selectors
from workbench.permissions import PROMOTE_CASE
from workbench.regression import cases_run
from workbench.services.cases import CaseRejected, case_promote
from workbench.views import revision_or_404


@login_required
@require_GET
def case_list(request):
    context = {
        "cases": workbench_selectors.case_list(),
        "reviewed": workbench_selectors.attempts_reviewed_not_promoted(),
        "can_promote": request.user.has_perm(PROMOTE_CASE),
        "active": selectors.revision_active(),
    }
    return render(request, "workbench/case_list.html", context)


@login_required
@permission_required(PROMOTE_CASE, raise_exception=True)
@require_POST
def case_promote_view(request):
    attempt_id = request.POST.get("attempt", "")
    attempt = workbench_selectors.attempt_get(int(attempt_id)) if attempt_id.isdigit() else None
    if attempt is None:
        raise Http404("no such attempt")
    try:
        case = case_promote(attempt=attempt, user=request.user, name=request.POST.get("name", ""))
    except CaseRejected as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, f"Regression case {case.name} saved (expects {case.expected_outcome}).")
    return redirect("workbench:cases")


@login_required
@require_GET
def revision_cases(request, name: str, number: int):
    revision = revision_or_404(name, number)
    results = cases_run(engine=selectors.revision_engine(revision))
    context = {"revision": revision, "results": results, "failed": sum(not r.passed for r in results)}
    return render(request, "workbench/revision_cases.html", context)
