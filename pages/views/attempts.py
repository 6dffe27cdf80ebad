"""An attempt's page (its verdict of record, the diagnosis, the timeline, the evidence trail with the lines around
each piece, the reviews and the review form) and its actions: review (the form, or "this one" on a candidate),
withdraw a review, the diagnosis JSON, the bundle, gather again; its leads (docs/leads.md: the lines no rule knows yet,
each opening its surrounding lines like the evidence) and asking for them on an attempt the rules settled."""

from datetime import timedelta

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import Http404, HttpResponse, StreamingHttpResponse
from django.shortcuts import redirect
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET, require_POST

from diagnoses import bundle_store
from diagnoses import selectors as diagnoses_selectors
from diagnoses.models import Attempt, Evidence, Lead, NodeEvent
from diagnoses.services import gathering, leads, reviews
from pages import selectors, timeline
from pages.forms import ReviewForm
from rules.actions import action_meaning
from web.htmx import partial_requested, refresh_page, render_page, render_partial

PENDING = "analysis-pending"  # the part of the page that waits for the analysis (polled)
PENDING_STATES = (Attempt.Analysis.QUEUED, Attempt.Analysis.ANALYSING)
REVIEW_PERMISSION = "diagnoses.add_review"
REANALYSE_PERMISSION = "diagnoses.change_attempt"


def _attempt_or_404(pk: int) -> Attempt:
    attempt = selectors.attempt_page(pk)
    if attempt is None:
        raise Http404("no such attempt")
    return attempt


def _verdict(attempt: Attempt) -> dict:
    """The verdict of record as the page leads with it, and the nodes among its own that are repeat offenders."""
    nodes = selectors.attempt_verdict_nodes(attempt)
    since = timezone.now() - timedelta(days=settings.FAULTLINE_REPEAT_OFFENDER_DAYS)
    counts = selectors.repeat_offenders(attempt, since=since, named=True)
    threshold = settings.FAULTLINE_REPEAT_OFFENDER_COUNT
    diagnosis = attempt.current_diagnosis
    engine = None
    if diagnosis is not None:
        root_nodes = sorted(diagnosis.root_cause_nodes.values_list("name", flat=True))
        engine = (diagnosis.outcome, diagnosis.domain, diagnosis.subdomain, root_nodes)
    mine = (attempt.verdict_outcome, attempt.verdict_domain, attempt.verdict_subdomain, nodes)
    return {
        "source": attempt.verdict_source,
        "outcome": attempt.verdict_outcome,
        "domain": attempt.verdict_domain,
        "subdomain": attempt.verdict_subdomain,
        "nodes": [{"name": name, "count": counts.get(name, 0), "offender": counts.get(name, 0) >= threshold}
                  for name in nodes],
        "review": attempt.verdict_review,
        "engine_differs": attempt.verdict_source == Attempt.VerdictSource.REVIEW and engine != mine,
        "engine_disagrees": attempt.engine_disagrees,
        "window_days": settings.FAULTLINE_REPEAT_OFFENDER_DAYS,
        "threshold": threshold,
    }  # fmt: skip


def _offenders(attempt: Attempt, nodes: list[str]) -> list[dict]:
    """The attempt's nodes that are repeat offenders (root cause of at least the threshold's attempts that ended in the
    window), whatever this attempt's verdict: a node that keeps failing is flagged wherever it runs."""
    since = timezone.now() - timedelta(days=settings.FAULTLINE_REPEAT_OFFENDER_DAYS)
    counts = selectors.repeat_offenders(attempt, since=since)
    threshold = settings.FAULTLINE_REPEAT_OFFENDER_COUNT
    return [{"name": name, "count": counts[name]} for name in nodes if counts.get(name, 0) >= threshold]


def _review_history(attempt: Attempt) -> list:
    """Every review, each marked active (the verdict of record), superseded (by a newer one) or withdrawn."""
    history = selectors.attempt_reviews(attempt)
    for review in history:
        if review.withdrawn:
            review.status = "withdrawn"
        else:
            review.status = "active" if review.pk == attempt.verdict_review_id else "superseded"
    return history


def _candidates(document: dict, evidence: list) -> list[dict]:
    """An ambiguous diagnosis's candidates, each with the evidence line behind it (the first of its rule)."""
    rows = []
    for candidate in document["candidates"]:
        lines = [item for item in evidence if item.rule == candidate["rule"]]
        on_node = [item for item in lines if item.node is not None and item.node.name in candidate["nodes"]]
        rows.append({"candidate": candidate, "evidence": (on_node or lines or [None])[0]})
    return rows


def _attempt_context(request, attempt: Attempt, form: ReviewForm | None = None) -> dict:
    diagnosis = attempt.current_diagnosis
    nodes = selectors.attempt_node_names(attempt)
    may_review = request.user.has_perm(REVIEW_PERMISSION)
    context = {
        "attempt": attempt,
        "log_zone": attempt.record.get("timezone") or "UTC",  # the zone of log stamps that name none
        "diagnosis": diagnosis,
        "nodes": nodes,
        "verdict": _verdict(attempt),
        "reviews": _review_history(attempt),
        "offenders": _offenders(attempt, nodes),
        "job_attempts": selectors.job_attempts(attempt.job_id),
        "last_good": diagnoses_selectors.attempt_last_good(attempt),
        "may_review": may_review and diagnosis is not None,
        "analysis_pending": diagnosis is None and attempt.analysis_state in PENDING_STATES,
        "form": form or ReviewForm(nodes=nodes),
        "may_gather_again": attempt.discovery is not None
        and diagnosis is None
        and request.user.has_perm(REANALYSE_PERMISSION),
    }
    if diagnosis is None:
        return context
    document = diagnosis.document
    evidence = selectors.evidence_trail(diagnosis)
    earlier = diagnoses_selectors.history_attempts(
        attempt=attempt, refs=[item.ref for item in evidence if item.source == "history"]
    )
    for item in evidence:
        item.history_attempt = earlier.get(item.ref)
    root_nodes = set((document["root_cause"] or {}).get("nodes", ()))
    highlighted = {name for candidate in document["candidates"] for name in candidate["nodes"]}
    highlighted |= {item.node.name for item in evidence if item.node is not None}
    zoom = request.GET.get("window") != "attempt"  # around the events by default: they are what matters
    causes = [document["root_cause"]] if document["root_cause"] else document["candidates"]
    actions = dict.fromkeys(cause["action"] for cause in causes if cause.get("action"))
    context.update(
        lead_set=diagnoses_selectors.lead_set_of(diagnosis),
        may_request_leads=may_review,
        document=document,
        actions=[(action, action_meaning(action)) for action in actions],
        evidence=evidence,
        missing_sources=[source for source in document["sources"] if source["status"] != "ok"],
        candidates=_candidates(document, evidence),
        flight_recorder=selectors.flight_recorder_summary(diagnosis),
        zoom=zoom,
        timeline=timeline.layout(
            start=attempt.start,
            end=attempt.end,
            nodes=nodes,
            events=selectors.timeline_events(diagnosis),
            root_cause_nodes=root_nodes,
            highlighted_nodes=highlighted,
            evidence_refs={item.ref: item.pk for item in reversed(evidence)},
            transitions=[(attempt.start, "start"), (attempt.end, f"end: {attempt.state}")],
            zoom=zoom,
        ),
    )
    return context


@login_required
@require_GET
def attempt_detail(request, pk: int):
    attempt = _attempt_or_404(pk)
    if partial_requested(request, PENDING):  # polled while the analysis runs: the whole page once it is done
        if attempt.current_diagnosis is not None or attempt.analysis_state not in PENDING_STATES:
            return refresh_page()
        return render_partial(
            request, "pages/attempt_detail.html", PENDING, {"attempt": attempt, "analysis_pending": True}
        )
    context = _attempt_context(request, attempt)
    return render_page(request, "pages/attempt_detail.html", context, partials=("timeline",), push=True)


@login_required
@require_GET
def evidence_context(request, pk: int, evidence_id: int):
    """The bundle's lines around one piece of evidence (about 20 either side)."""
    return _line_context(request, selectors.evidence_of_attempt(attempt_id=pk, evidence_id=evidence_id))


@login_required
@require_GET
def event_context(request, pk: int, event_id: int):
    """The bundle's lines around a timeline event that no evidence row shows."""
    return _line_context(request, selectors.event_of_attempt(attempt_id=pk, event_id=event_id))


@login_required
@require_GET
def lead_context(request, pk: int, lead_id: int):
    """The bundle's lines around a lead."""
    lead = diagnoses_selectors.lead_of_attempt(attempt_id=pk, lead_id=lead_id)
    return _line_context(request, lead, lead.lead_set.diagnosis.attempt if lead else None)


@login_required
@require_POST
def attempt_leads(request, pk: int):
    """Compute the leads of an attempt the rules settled (a triager's request)."""
    if not request.user.has_perm(REVIEW_PERMISSION):
        raise PermissionDenied
    attempt = _attempt_or_404(pk)
    found = leads.leads_request(attempt=attempt)
    if found is None:
        messages.error(request, "This attempt has no diagnosis yet: no leads.")
    else:
        messages.success(request, f"{found.leads.count()} leads found.")
    return redirect(reverse("pages:attempt-detail", args=[pk]) + "#leads")


def _line_context(request, item: Evidence | NodeEvent | Lead | None, attempt: Attempt | None = None):
    """The lines around ``item``'s line in the attempt's bundle, the line itself marked."""
    if item is None:
        raise Http404("no such line for this attempt")
    attempt = attempt or item.diagnosis.attempt
    lines = diagnoses_selectors.bundle_excerpt(attempt=attempt, ref=item.ref, context=20)
    line = item.ref.rpartition(":")[2]
    context = {"item": item, "lines": lines, "line": int(line) if line.isdigit() else None}
    return render_partial(request, "pages/attempt_detail.html", "evidence-context", context)


@login_required
@require_POST
def attempt_review(request, pk: int):
    if not request.user.has_perm(REVIEW_PERMISSION):
        raise PermissionDenied("only triagers may review diagnoses")
    attempt = _attempt_or_404(pk)
    if attempt.current_diagnosis is None:
        raise Http404("this attempt has no diagnosis to review yet")
    form = ReviewForm(request.POST, nodes=selectors.attempt_node_names(attempt))
    if form.is_valid():
        try:
            reviews.review_create(diagnosis=attempt.current_diagnosis, reviewer=request.user, **form.cleaned_data)
        except ValidationError as exc:
            for field, errors in exc.message_dict.items():
                form.add_error(field if field in form.fields else None, errors)
    if form.is_valid():
        return _reviewed(request, attempt, "Review recorded.")
    context = _attempt_context(request, attempt, form)
    status = 200 if request.htmx else 400  # htmx swaps the reviews in, with the form's errors
    return render_page(request, "pages/attempt_detail.html", context, partials=("reviews",), status=status)


@login_required
@require_POST
def review_withdraw(request, pk: int, review_id: int):
    """Withdraw one of the attempt's reviews: it stays in the history; the verdict falls back."""
    if not request.user.has_perm(REVIEW_PERMISSION):
        raise PermissionDenied("only triagers may withdraw reviews")
    attempt = _attempt_or_404(pk)
    review = selectors.review_of_attempt(attempt_id=pk, review_id=review_id)
    if review is None:
        raise Http404("no such review of this attempt")
    try:
        reviews.review_withdraw(review=review, by=request.user)
    except ValidationError as exc:
        messages.error(request, " ".join(exc.messages))
        return redirect(reverse("pages:attempt-detail", args=[pk]) + "#reviews")
    return _reviewed(request, attempt, "Review withdrawn.")


def _reviewed(request, attempt: Attempt, message: str):
    """After a review or a withdrawal: the page again, since its verdict changed with its reviews (htmx is told to
    reload it: a redirect to the same address with a fragment would not)."""
    messages.success(request, message)
    if request.htmx:
        return HttpResponse(status=204, headers={"HX-Refresh": "true"})
    return redirect(reverse("pages:attempt-detail", args=[attempt.pk]) + "#reviews")


@login_required
@require_GET
def review_subdomains(request):
    """The subdomain select of the review form for the chosen domain (htmx swaps it in when the domain changes)."""
    form = ReviewForm(request.GET, nodes=[])
    return render_partial(request, "pages/attempt_detail.html", "subdomain-select", {"form": form})


@login_required
@require_GET
def attempt_diagnosis_json(request, pk: int):
    """The current diagnosis document, byte for byte as the engine wrote it."""
    attempt = _attempt_or_404(pk)
    if attempt.current_diagnosis is None:
        raise Http404("this attempt has no diagnosis yet")
    return HttpResponse(attempt.current_diagnosis.document_json, content_type="application/json")


@login_required
@require_GET
def attempt_bundle(request, pk: int):
    """The attempt's bundle as a ``.tar.gz``, streamed."""
    attempt = _attempt_or_404(pk)
    if not bundle_store.exists(attempt.bundle):
        raise Http404("this attempt's bundle is not stored (not gathered yet, or removed after the retention period)")
    name = f"{attempt.cluster.name}-{attempt.job.job_id}-{attempt.number}"
    response = StreamingHttpResponse(bundle_store.archive_stream(attempt.bundle, name), content_type="application/gzip")
    response["Content-Disposition"] = f'attachment; filename="{name}.tar.gz"'
    return response


@login_required
@require_POST
def attempt_gather_again(request, pk: int):
    """Gather a discovered attempt anew from its cluster's sources (its gathering or analysis failed)."""
    if not request.user.has_perm(REANALYSE_PERMISSION):
        raise PermissionDenied("only triagers may ask for an attempt to be gathered again")
    attempt = _attempt_or_404(pk)
    try:
        gathering.attempt_gather_again(attempt=attempt)
    except gathering.GatherRefused as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, "Gathering again: the attempt's analysis is queued.")
    return redirect("pages:attempt-detail", pk=pk)
