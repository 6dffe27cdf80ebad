"""An attempt's page (the diagnosis, the timeline, the evidence trail with the lines around each piece, the
reviews and the review form) and its actions: review, the diagnosis JSON, the bundle, gather again."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpResponse, StreamingHttpResponse
from django.shortcuts import redirect
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from diagnoses import bundle_store
from diagnoses import selectors as diagnoses_selectors
from diagnoses.models import Attempt
from diagnoses.services import gathering, reviews
from pages import selectors, timeline
from pages.forms import ReviewForm
from web.htmx import render_page, render_partial

REVIEW_PERMISSION = "diagnoses.add_review"
REANALYSE_PERMISSION = "diagnoses.change_attempt"


def _attempt_or_404(pk: int) -> Attempt:
    attempt = selectors.attempt_page(pk)
    if attempt is None:
        raise Http404("no such attempt")
    return attempt


def _attempt_context(request, attempt: Attempt, form: ReviewForm | None = None) -> dict:
    diagnosis = attempt.current_diagnosis
    nodes = selectors.attempt_node_names(attempt)
    may_review = request.user.has_perm(REVIEW_PERMISSION)
    context = {
        "attempt": attempt,
        "diagnosis": diagnosis,
        "nodes": nodes,
        "reviews": selectors.attempt_reviews(attempt),
        "may_review": may_review and diagnosis is not None,
        "form": form or ReviewForm(nodes=nodes),
        "may_gather_again": attempt.discovery is not None
        and diagnosis is None
        and request.user.has_perm(REANALYSE_PERMISSION),
    }
    if diagnosis is None:
        return context
    document = diagnosis.document
    evidence = selectors.evidence_trail(diagnosis)
    root_nodes = set((document["root_cause"] or {}).get("nodes", ()))
    highlighted = {name for candidate in document["candidates"] for name in candidate["nodes"]}
    highlighted |= {item.node.name for item in evidence if item.node is not None}
    zoom = request.GET.get("window") != "attempt"  # around the events by default: they are what matters
    context.update(
        document=document,
        evidence=evidence,
        missing_sources=[source for source in document["sources"] if source["status"] != "ok"],
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
    context = _attempt_context(request, attempt)
    return render_page(request, "pages/attempt_detail.html", context, partials=("timeline",), push=True)


@login_required
@require_GET
def evidence_context(request, pk: int, evidence_id: int):
    """The bundle's lines around one piece of evidence (about 20 either side)."""
    evidence = selectors.evidence_of_attempt(attempt_id=pk, evidence_id=evidence_id)
    if evidence is None:
        raise Http404("no such evidence for this attempt")
    lines = diagnoses_selectors.bundle_excerpt(attempt=evidence.diagnosis.attempt, ref=evidence.ref, context=20)
    line = evidence.ref.rpartition(":")[2]
    context = {"item": evidence, "lines": lines, "line": int(line) if line.isdigit() else None}
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
        reviews.review_create(diagnosis=attempt.current_diagnosis, reviewer=request.user, **form.cleaned_data)
        if not request.htmx:
            messages.success(request, "Review recorded.")
            return redirect(reverse("pages:attempt-detail", args=[pk]) + "#reviews")
        form = None
    context = {**_attempt_context(request, attempt, form), "recorded": form is None}
    status = 200 if request.htmx else 400  # htmx swaps the reviews in, with the form's errors or the new review
    return render_page(request, "pages/attempt_detail.html", context, partials=("reviews",), status=status)


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
    if not bundle_store.path_of(attempt.bundle).is_dir():
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
