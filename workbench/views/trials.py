"""A revision tried on a stored attempt (its diagnosis next to the stored one), and the rule explorer (which
rules match a log line, and why one does not). Both read the attempt's stored bundle; nothing is gathered
or stored."""

from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import render
from django.utils import timezone
from django.views.decorators.http import require_GET

from diagnoses import selectors as diagnoses_selectors
from diagnoses.models import Attempt
from engine.context import stream_kind
from rules import selectors
from workbench import agreement
from workbench import selectors as workbench_selectors
from workbench.explorer import LOG_KINDS, explore
from workbench.views import revision_or_404


def _attempt_or_404(pk: int) -> Attempt:
    attempt = workbench_selectors.attempt_get(pk)
    if attempt is None:
        raise Http404("no such attempt")
    return attempt


@login_required
@require_GET
def revision_try(request, name: str, number: int):
    revision = revision_or_404(name, number)
    context = {"revision": revision, "attempts": workbench_selectors.attempt_choices()}
    attempt_id = request.GET.get("attempt", "")
    if attempt_id.isdigit():
        attempt = _attempt_or_404(int(attempt_id))
        stored = attempt.current_diagnosis.document if attempt.current_diagnosis else None
        try:
            with diagnoses_selectors.attempt_context(attempt) as bundle:
                draft = selectors.revision_engine(revision).diagnose(bundle)
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
    return render(request, "workbench/revision_try.html", context)


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
    revision = revision_or_404(name, number)
    line, stream, kind = (
        request.GET.get("line", ""),
        request.GET.get("stream", "") or "syslog",
        request.GET.get("kind", ""),
    )
    attempt, evidence, problem = None, [], ""
    attempt_id = request.GET.get("attempt", "")
    if attempt_id.isdigit():
        attempt = _attempt_or_404(int(attempt_id))
        evidence = workbench_selectors.attempt_evidence(attempt)
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
        "attempts": workbench_selectors.attempt_choices(),
        "evidence": evidence,
        "problem": problem,
        "exploration": exploration,
        "focus": next((v for v in exploration.verdicts if v.rule.id == focus), None) if exploration and focus else None,
        "focus_id": focus,
    }
    return render(request, "workbench/revision_explore.html", context)


def _line_at(attempt: Attempt, ref: str) -> tuple[str, str, str, str]:
    """(line, stream name, kind, problem) of a bundle line ``logs/<node>/<stream>.log:<n>``."""
    lines = diagnoses_selectors.bundle_excerpt(attempt=attempt, ref=ref, context=0)
    path = ref.rpartition(":")[0]
    if not path.startswith("logs/") or not lines:
        return "", "", "", f"{ref}: not a line of a log stream in this attempt's bundle"
    stem = path.rsplit("/", 1)[-1].rsplit(".", 1)[0]
    return lines[0]["text"], stem, stream_kind(stem), ""
