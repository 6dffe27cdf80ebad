"""Background runs over stored attempts: a revision's backtest, a reanalysis with the active revision, a
run's progress (polled by htmx until it finishes) and cancelling it."""

from django.conf import settings
from django.contrib.auth.decorators import login_required, permission_required
from django.core.exceptions import PermissionDenied
from django.http import Http404
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from diagnoses import selectors as diagnoses_selectors
from diagnoses.models import Attempt, Diagnosis
from rules import selectors, services
from web.htmx import render_page
from workbench import selectors as workbench_selectors
from workbench.models import BatchRun
from workbench.permissions import RUN_BATCH
from workbench.services.batches import FilterRejected, attempts_matching, batch_cancel, batch_start
from workbench.views import revision_or_404


def _run_or_404(pk: int) -> BatchRun:
    run = workbench_selectors.run_get(pk)
    if run is None:
        raise Http404("no such run")
    return run


def _filter_form(request) -> dict:
    source = request.POST if request.method == "POST" else request.GET
    return {name: source.get(name, "").strip() for name in ("ended_after", "ended_before", "cluster", "outcome")}


def _limit(request) -> int | None:
    value = request.POST.get("limit", "").strip()
    return int(value) if value.isdigit() else None


@login_required
@require_http_methods(["GET", "POST"])
def revision_backtest(request, name: str, number: int):
    revision = revision_or_404(name, number)
    runs = workbench_selectors.run_list(BatchRun.Kind.BACKTEST, revision)
    return _batch_page(request, BatchRun.Kind.BACKTEST, revision, runs, "workbench/revision_backtest.html")


@login_required
@require_http_methods(["GET", "POST"])
def reanalyse(request):
    """Reanalyses run with the active revision (on a POST, the default pack is stored as its revision 1 when
    no revision is stored yet; a GET only reads)."""
    revision = services.active_revision() if request.method == "POST" else selectors.revision_active()
    runs = workbench_selectors.run_list(BatchRun.Kind.REANALYSIS)
    return _batch_page(request, BatchRun.Kind.REANALYSIS, revision, runs, "workbench/reanalyse.html")


def _confirmation(filters: dict, limit: int | None) -> dict:
    """What a reanalysis of these attempts would touch: how many, and how many of them people reviewed."""
    matching = attempts_matching(filters)
    cap = min(limit or settings.FAULTLINE_BATCH_MAX_ATTEMPTS, settings.FAULTLINE_BATCH_MAX_ATTEMPTS)
    chosen = matching.values("pk")[:cap]
    return {
        "count": matching.filter(pk__in=chosen).count(),
        "reviewed": matching.filter(pk__in=chosen, verdict_source=Attempt.VerdictSource.REVIEW).count(),
        "limit": limit or "",
    }


def _batch_page(request, kind: str, revision, runs, template: str):
    """A backtest's or a reanalysis's page: the filter form, and on POST the run it starts. A reanalysis (it
    replaces the attempts' current diagnoses) first answers with the number of attempts it would touch, and
    starts when that is confirmed."""
    filters, error, confirm = _filter_form(request), "", None
    if request.method == "POST":
        if not request.user.has_perm(RUN_BATCH):
            raise PermissionDenied
        try:
            if kind == BatchRun.Kind.REANALYSIS and request.POST.get("confirmed") != "yes":
                confirm = _confirmation(filters, _limit(request))
            else:
                run = batch_start(
                    kind=kind, revision=revision, filters=filters, user=request.user, limit=_limit(request)
                )
                return redirect("workbench:run", pk=run.pk)
        except FilterRejected as exc:
            error = str(exc)
    context = {
        "revision": revision,
        "filters": filters,
        "error": error,
        "confirm": confirm,
        "outcomes": Diagnosis.Outcome.choices,
        "clusters": diagnoses_selectors.cluster_list(),
        "runs": runs,
        "can_run": request.user.has_perm(RUN_BATCH),
        "maximum": settings.FAULTLINE_BATCH_MAX_ATTEMPTS,
    }
    return render(request, template, context, status=400 if error else 200)


@login_required
@require_GET
def run_detail(request, pk: int):
    run = _run_or_404(pk)
    context = {"run": run, "can_run": request.user.has_perm(RUN_BATCH)}
    return render_page(
        request, "workbench/run_detail.html", context, partials=("run-progress",), stop_polling=run.finished_state
    )


@login_required
@permission_required(RUN_BATCH, raise_exception=True)
@require_POST
def run_cancel(request, pk: int):
    run = _run_or_404(pk)
    batch_cancel(run=run)
    return redirect("workbench:run", pk=run.pk)
