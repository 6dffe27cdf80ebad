"""The rule workbench's pages: thin views over ``rules.selectors`` (reads) and the services (writes).

Every page needs a login; every write needs the rule editor's permission (``rules.permissions``), and
anyone else gets 403. Log text and rule text are always escaped by the templates.
"""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required, permission_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone
from django.utils.cache import patch_vary_headers
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django_htmx.http import HttpResponseStopPolling

from diagnoses import selectors as diagnoses_selectors
from diagnoses.models import Attempt, Diagnosis, Review
from engine import RuleSetError, parse_ruleset
from engine.context import stream_kind
from rules import agreement, permissions, selectors, services
from rules.batches import FilterRejected, batch_cancel, batch_start
from rules.cases import CaseRejected, case_promote, cases_run
from rules.explorer import LOG_KINDS, explore
from rules.models import BatchRun, RegressionCase, RuleSet, RuleSetRevision

ATTEMPT_CHOICES = 300  # attempts offered in a picker, newest first


def _revision(name: str, number: int) -> RuleSetRevision:
    revision = selectors.revision_get(name, number)
    if revision is None:
        raise Http404(f"rule set {name!r} has no revision {number}")
    return revision


def _can(request: HttpRequest, permission: str) -> bool:
    return request.user.has_perm(permission)


def _attempt_choices():
    return diagnoses_selectors.attempt_list()[:ATTEMPT_CHOICES]


# Rule sets and revisions -------------------------------------------------------------------------


@login_required
@require_GET
def ruleset_list(request):
    services.active_revision()  # the default pack is revision 1 of "default" from the first visit on
    return render(request, "rules/ruleset_list.html", {"rulesets": selectors.ruleset_list()})


@login_required
@require_GET
def ruleset_detail(request, name: str):
    ruleset = get_object_or_404(RuleSet, name=name)
    revisions = list(selectors.revision_list(ruleset))
    context = {
        "ruleset": ruleset,
        "revisions": revisions,
        "active": next((r for r in revisions if r.active), None),
        "activations": selectors.activation_list(ruleset)[:50],
        "can_edit": _can(request, permissions.EDIT_RULES),
    }
    return render(request, "rules/ruleset_detail.html", context)


@login_required
@require_GET
def ruleset_diff(request, name: str):
    ruleset = get_object_or_404(RuleSet, name=name)
    numbers = [request.GET.get(key, "") for key in ("a", "b")]
    if not all(number.isdigit() for number in numbers):
        return render(
            request,
            "rules/ruleset_diff.html",
            {"ruleset": ruleset, "error": "choose two revisions to compare (a and b)"},
            status=400,
        )
    old, new = (_revision(name, int(number)) for number in numbers)
    context = {
        "ruleset": ruleset,
        "old": old,
        "new": new,
        "table": selectors.revision_diff(old, new),
        "stats": selectors.revision_diff_stats(old, new),
    }
    return render(request, "rules/ruleset_diff.html", context)


@login_required
@require_GET
def revision_detail(request, name: str, number: int):
    revision = _revision(name, number)
    active = selectors.revision_active(name)
    context = {
        "revision": revision,
        "active": active,
        "lines": revision.text.splitlines(),
        "can_edit": _can(request, permissions.EDIT_RULES),
        "can_activate": _can(request, permissions.ACTIVATE),
        "can_run": _can(request, permissions.RUN_BATCH),
        "activations": revision.activations.select_related("user", "previous")[:20],
    }
    return render(request, "rules/revision_detail.html", context)


@login_required
@permission_required(permissions.ACTIVATE, raise_exception=True)
@require_POST
def revision_activate(request, name: str, number: int):
    revision = _revision(name, number)
    try:
        activation = services.revision_activate(
            revision=revision, user=request.user, message=request.POST.get("message", "")
        )
    except ValueError as exc:
        messages.error(request, str(exc))
        return redirect("rules:revision", name=name, number=number)
    verb = "Rolled back to" if activation.is_rollback else "Activated"
    messages.success(request, f"{verb} {revision}: new analyses use it. Reanalyse stored attempts to apply it.")
    return redirect("rules:ruleset", name=name)


# The editor --------------------------------------------------------------------------------------


def _check(name: str, text: str) -> dict:
    """The editor's validation: the text's lines and the engine loader's errors, by line."""
    text = services.normalise_text(text)
    lines = text.splitlines() or [""]
    try:
        ruleset = parse_ruleset([(f"{name}.yaml", text)], name=name)
        errors, rules = [], len(ruleset.rules)
    except RuleSetError as exc:
        errors, rules = exc.errors, 0
    by_line: dict[int, list] = {}
    for error in errors:
        by_line.setdefault(min(max(error.line, 1), len(lines)), []).append(error)
    gutter = [(number, by_line.get(number, [])) for number in range(1, len(lines) + 1)]
    return {"errors": errors, "gutter": gutter, "rule_count": rules}


@login_required
@permission_required(permissions.EDIT_RULES, raise_exception=True)
@require_http_methods(["GET", "POST"])
def editor(request, name: str):
    ruleset = get_object_or_404(RuleSet, name=name)
    base_number = request.POST.get("parent") or request.GET.get("from")
    base = (
        _revision(name, int(base_number))
        if base_number and base_number.isdigit()
        else selectors.revision_active(name) or ruleset.revisions.first()
    )
    text = request.POST.get("text", base.text if base else "")
    status = 200
    if request.method == "POST":
        try:
            revision = services.revision_create(
                ruleset=ruleset, text=text, author=request.user, message=request.POST.get("message", ""), parent=base
            )
        except RuleSetError:
            messages.error(request, "The draft was not saved: the rule set has errors (below, at their lines).")
            status = 400
        else:
            messages.success(request, f"Saved draft {revision}. It runs nowhere until it is activated.")
            return redirect("rules:revision", name=name, number=revision.number)
    context = {"ruleset": ruleset, "base": base, "text": text, "message": request.POST.get("message", "")}
    return render(request, "rules/editor.html", {**context, **_check(name, text)}, status=status)


@login_required
@permission_required(permissions.EDIT_RULES, raise_exception=True)
@require_POST
def editor_check(request, name: str):
    ruleset = get_object_or_404(RuleSet, name=name)
    response = render(request, "rules/_editor_check.html", _check(ruleset.name, request.POST.get("text", "")))
    patch_vary_headers(response, ["HX-Request"])
    return response


# Try a revision on an attempt --------------------------------------------------------------------


@login_required
@require_GET
def revision_try(request, name: str, number: int):
    revision = _revision(name, number)
    context = {"revision": revision, "attempts": _attempt_choices()}
    attempt_id = request.GET.get("attempt", "")
    if attempt_id.isdigit():
        attempt = get_object_or_404(diagnoses_selectors.attempt_list(), pk=int(attempt_id))
        stored = attempt.current_diagnosis.document if attempt.current_diagnosis else None
        try:
            draft = selectors.revision_engine(revision).diagnose(diagnoses_selectors.attempt_context(attempt))
        except Exception as exc:  # the page says why the attempt could not be diagnosed
            context.update(attempt=attempt, failure=f"{type(exc).__name__}: {exc}")
        else:
            context.update(
                attempt=attempt,
                stored=stored,
                stored_revision=attempt.current_diagnosis.revision if attempt.current_diagnosis else None,
                draft=draft,
                changes=_changes(stored, draft),
            )
    return render(request, "rules/revision_try.html", context)


def _changes(before: dict | None, after: dict) -> list[tuple[str, str, str]]:
    """(what, before, after) for each part of the diagnosis that differs."""
    if before is None:
        return [("diagnosis", "none stored", after["outcome"])]
    old, new = agreement.key(before), agreement.key(after)
    rows = []
    for field in ("outcome", "domain", "subdomain", "rule", "nodes"):
        if old[field] != new[field]:
            show = (lambda v: ", ".join(v) or "(the job)") if field == "nodes" else (lambda v: v or "-")
            rows.append((field, show(old[field]), show(new[field])))
    return rows


# The rule explorer -------------------------------------------------------------------------------


@login_required
@require_GET
def revision_explore(request, name: str, number: int):
    revision = _revision(name, number)
    line, stream, kind = (
        request.GET.get("line", ""),
        request.GET.get("stream", "") or "syslog",
        request.GET.get("kind", ""),
    )
    attempt, evidence, problem = None, [], ""
    attempt_id = request.GET.get("attempt", "")
    if attempt_id.isdigit():
        attempt = get_object_or_404(Attempt.objects.select_related("cluster", "job"), pk=int(attempt_id))
        if attempt.current_diagnosis_id:
            evidence = list(attempt.current_diagnosis.evidence.select_related("node")[:100])
        ref = request.GET.get("ref", "")
        if ref:
            line, stream, kind, problem = _line_at(attempt, ref)
    if kind and kind not in LOG_KINDS:
        kind, problem = "", f"{kind!r} is not a stream kind ({', '.join(LOG_KINDS)})"
    exploration = None
    if line:
        exploration = explore(
            selectors.revision_engine(revision).ruleset,
            line,
            stream=stream,
            kind=kind,
            job_id=attempt.job.job_id if attempt else "",
            zone=(attempt.record.get("timezone") or "UTC") if attempt else "UTC",
            around=attempt.end if attempt else timezone.now(),
        )
    focus = request.GET.get("rule", "")
    context = {
        "revision": revision,
        "line": line,
        "stream": stream,
        "kind": kind or (stream_kind(stream) if line else ""),
        "kinds": LOG_KINDS,
        "attempt": attempt,
        "attempts": _attempt_choices(),
        "evidence": evidence,
        "problem": problem,
        "exploration": exploration,
        "focus": next((v for v in exploration.verdicts if v.rule.id == focus), None) if exploration and focus else None,
        "focus_id": focus,
    }
    return render(request, "rules/revision_explore.html", context)


def _line_at(attempt: Attempt, ref: str) -> tuple[str, str, str, str]:
    """(line, stream name, kind, problem) of a bundle line ``logs/<node>/<stream>.log:<n>``."""
    lines = diagnoses_selectors.bundle_excerpt(attempt=attempt, ref=ref, context=0)
    path = ref.rpartition(":")[0]
    if not path.startswith("logs/") or not lines:
        return "", "", "", f"{ref}: not a line of a log stream in this attempt's bundle"
    stem = path.rsplit("/", 1)[-1].rsplit(".", 1)[0]
    return lines[0]["text"], stem, stream_kind(stem), ""


# Regression cases --------------------------------------------------------------------------------


@login_required
@require_GET
def case_list(request):
    promoted = RegressionCase.objects.exclude(attempt=None).values("attempt_id")
    reviewed = (
        diagnoses_selectors.attempt_list()
        .filter(pk__in=Review.objects.values("diagnosis__attempt_id"))
        .exclude(pk__in=promoted)[:200]
    )
    context = {
        "cases": RegressionCase.objects.select_related("attempt__cluster", "attempt__job", "created_by"),
        "reviewed": reviewed,
        "can_promote": _can(request, permissions.PROMOTE_CASE),
        "active": services.active_revision(),
    }
    return render(request, "rules/case_list.html", context)


@login_required
@permission_required(permissions.PROMOTE_CASE, raise_exception=True)
@require_POST
def case_promote_view(request):
    attempt = get_object_or_404(Attempt.objects.select_related("cluster", "job"), pk=request.POST.get("attempt") or 0)
    try:
        case = case_promote(attempt=attempt, user=request.user, name=request.POST.get("name", ""))
    except CaseRejected as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, f"Regression case {case.name} saved (expects {case.expected_outcome}).")
    return redirect("rules:cases")


@login_required
@require_GET
def revision_cases(request, name: str, number: int):
    revision = _revision(name, number)
    results = cases_run(engine=selectors.revision_engine(revision))
    context = {"revision": revision, "results": results, "failed": sum(not r.passed for r in results)}
    return render(request, "rules/revision_cases.html", context)


# Backtests and reanalyses ------------------------------------------------------------------------


def _filter_form(request) -> dict:
    source = request.POST if request.method == "POST" else request.GET
    return {name: source.get(name, "").strip() for name in ("ended_after", "ended_before", "cluster", "outcome")}


def _limit(request) -> int | None:
    value = request.POST.get("limit", "").strip()
    return int(value) if value.isdigit() else None


@login_required
@require_http_methods(["GET", "POST"])
def revision_backtest(request, name: str, number: int):
    revision = _revision(name, number)
    runs = revision.batch_runs.filter(kind=BatchRun.Kind.BACKTEST)[:10]
    return _batch_page(request, BatchRun.Kind.BACKTEST, revision, runs, "rules/revision_backtest.html")


@login_required
@require_http_methods(["GET", "POST"])
def reanalyse(request):
    runs = BatchRun.objects.filter(kind=BatchRun.Kind.REANALYSIS).select_related("revision__ruleset")[:10]
    return _batch_page(request, BatchRun.Kind.REANALYSIS, services.active_revision(), runs, "rules/reanalyse.html")


def _batch_page(request, kind: str, revision, runs, template: str):
    """A backtest's or a reanalysis's page: the filter form, and on POST the run it starts."""
    filters, error = _filter_form(request), ""
    if request.method == "POST":
        if not _can(request, permissions.RUN_BATCH):
            raise PermissionDenied
        try:
            run = batch_start(kind=kind, revision=revision, filters=filters, user=request.user, limit=_limit(request))
        except FilterRejected as exc:
            error = str(exc)
        else:
            return redirect("rules:run", pk=run.pk)
    context = {
        "revision": revision,
        "filters": filters,
        "error": error,
        "outcomes": Diagnosis.Outcome.choices,
        "clusters": diagnoses_selectors.cluster_list(),
        "runs": runs,
        "can_run": _can(request, permissions.RUN_BATCH),
        "maximum": settings.FAULTLINE_BATCH_MAX_ATTEMPTS,
    }
    return render(request, template, context, status=400 if error else 200)


@login_required
@require_GET
def run_detail(request, pk: int):
    run = get_object_or_404(BatchRun.objects.select_related("revision__ruleset", "created_by"), pk=pk)
    context = {"run": run, "can_run": _can(request, permissions.RUN_BATCH)}
    if request.headers.get("HX-Request"):
        response = render(request, "rules/_run_progress.html", context)
        if run.finished_state:
            response = HttpResponseStopPolling(response.content)  # 286: htmx swaps it in and stops polling
        patch_vary_headers(response, ["HX-Request"])
        return response
    response = render(request, "rules/run_detail.html", context)
    patch_vary_headers(response, ["HX-Request"])
    return response


@login_required
@permission_required(permissions.RUN_BATCH, raise_exception=True)
@require_POST
def run_cancel(request, pk: int):
    run = get_object_or_404(BatchRun, pk=pk)
    batch_cancel(run=run)
    return redirect("rules:run", pk=run.pk)
