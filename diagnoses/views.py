"""The triage pages: overview, job browser, attempt (timeline, evidence, reviews), triage queue, node.

Views are thin: reads through ``selectors``, writes through ``services``. A list answers an htmx
request aimed at its table with the table alone (the partial of the same template) and tells htmx
the page's canonical URL, so that filters live in the address bar.
"""

from collections import Counter
from datetime import datetime, timedelta
from urllib.parse import urlencode

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpResponse, StreamingHttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_POST
from django.views.decorators.vary import vary_on_headers
from django_htmx.http import push_url

from diagnoses import bundle_store, charts, paging, selectors, timeline
from diagnoses.filters import AttemptFilter
from diagnoses.forms import ReviewForm
from diagnoses.models import Attempt, Cluster, Diagnosis
from diagnoses.services import reviews
from engine.taxonomy import DOMAINS

REVIEW_PERMISSION = "diagnoses.add_review"
SORTS = ("end", "name", "user", "state")  # the job list's sortable columns
PAGE_SIZE = 50
WINDOWS = (7, 30)
TOP = 8  # rows of the overview's top root causes and nodes
OUTCOME_SERIES = [*Diagnosis.Outcome.values, "not analysed"]
DOMAIN_SERIES = [*DOMAINS, "ambiguous", "none", "not analysed"]


def _partial(request, target: str) -> bool:
    """Whether this is an htmx request for the element ``target`` alone (a history restore wants the page)."""
    return bool(request.htmx) and request.htmx.target == target and not request.htmx.history_restore_request


def _canonical(request) -> str:
    """This page's URL with the empty query parameters left out (what a person shares)."""
    query = urlencode([(key, value) for key, value in request.GET.items() if value])
    return f"{request.path}?{query}" if query else request.path


def _cursor(request) -> dict:
    return {"after": request.GET.get("after", ""), "before": request.GET.get("before", "")}


@login_required
def overview(request):
    days = 7 if request.GET.get("days") == "7" else 30
    first = timezone.now().date() - timedelta(days=days - 1)
    since = datetime.combine(first, datetime.min.time(), tzinfo=timezone.get_current_timezone())
    day_list = [first + timedelta(days=n) for n in range(days)]
    rows = selectors.failures_by_day(since=since)
    by_outcome = charts.count_by_day(rows, lambda row: row["outcome"] or "not analysed")
    by_domain = charts.count_by_day(rows, lambda row: row["domain"] or ("none" if row["outcome"] else "not analysed"))
    causes = Counter()
    for row in rows:
        if row["outcome"] == Diagnosis.Outcome.ATTRIBUTED:
            causes[row["domain"], row["subdomain"]] += row["count"]
    verdicts = selectors.review_verdicts(since=since)
    backlog = selectors.backlog_size()
    context = {
        "days": days,
        "windows": WINDOWS,
        "outcomes": charts.stacked_by_day(by_outcome, days=day_list, series=OUTCOME_SERIES),
        "domains": charts.stacked_by_day(by_domain, days=day_list, series=DOMAIN_SERIES),
        "subdomains": sorted(causes.items(), key=lambda item: (-item[1], item[0]))[:TOP],
        "fault_nodes": selectors.top_fault_nodes(since=since, limit=TOP),
        "backlog": min(backlog, paging.COUNT_CAP),
        "backlog_capped": backlog > paging.COUNT_CAP,
        "verdicts": verdicts,
        "reviewed": sum(verdicts.values()),
        "since": first,
    }
    return render(request, "diagnoses/overview.html", context)


@login_required
@vary_on_headers("HX-Request")
def job_list(request):
    filters = AttemptFilter(request.GET, queryset=selectors.attempt_table())
    sort = request.GET.get("sort", "")
    sort = sort if sort.lstrip("-") in SORTS else "-end"
    rows = filters.qs if filters.is_valid() else filters.qs.none()  # a wrong filter lists nothing, and says why
    page = paging.seek(rows, sort=sort, size=PAGE_SIZE, **_cursor(request))
    context = {
        "filters": filters,
        "page": page,
        "clusters": Cluster.objects.values_list("name", flat=True),
        "outcomes": Diagnosis.Outcome.values,
        "domains": [*DOMAINS, "ambiguous"],
        "subdomains": sorted({s for subdomains in DOMAINS.values() for s in subdomains}),
    }
    if _partial(request, "attempt-table"):
        return push_url(render(request, "diagnoses/job_list.html#attempt-table", context), _canonical(request))
    return render(request, "diagnoses/job_list.html", context)


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
@vary_on_headers("HX-Request")
def attempt_detail(request, pk: int):
    attempt = _attempt_or_404(pk)
    context = _attempt_context(request, attempt)
    if _partial(request, "timeline"):
        return push_url(render(request, "diagnoses/attempt_detail.html#timeline", context), _canonical(request))
    return render(request, "diagnoses/attempt_detail.html", context)


@login_required
def evidence_context(request, pk: int, evidence_id: int):
    """The bundle's lines around one piece of evidence (about 20 either side)."""
    evidence = selectors.evidence_of_attempt(attempt_id=pk, evidence_id=evidence_id)
    if evidence is None:
        raise Http404("no such evidence for this attempt")
    lines = selectors.bundle_excerpt(attempt=evidence.diagnosis.attempt, ref=evidence.ref, context=20)
    line = evidence.ref.rpartition(":")[2]
    context = {"item": evidence, "lines": lines, "line": int(line) if line.isdigit() else None}
    return render(request, "diagnoses/attempt_detail.html#evidence-context", context)


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
            return redirect(reverse("diagnoses:attempt-detail", args=[pk]) + "#reviews")
        form = None
    context = {**_attempt_context(request, attempt, form), "recorded": form is None}
    if request.htmx:
        return render(request, "diagnoses/attempt_detail.html#reviews", context)
    return render(request, "diagnoses/attempt_detail.html", context, status=400)


@login_required
def attempt_diagnosis_json(request, pk: int):
    """The current diagnosis document, byte for byte as the engine wrote it."""
    attempt = _attempt_or_404(pk)
    if attempt.current_diagnosis is None:
        raise Http404("this attempt has no diagnosis yet")
    return HttpResponse(attempt.current_diagnosis.document_json, content_type="application/json")


@login_required
def attempt_bundle(request, pk: int):
    """The attempt's bundle as a ``.tar.gz``, streamed."""
    attempt = _attempt_or_404(pk)
    name = f"{attempt.cluster.name}-{attempt.job.job_id}-{attempt.number}"
    response = StreamingHttpResponse(bundle_store.archive_stream(attempt.bundle, name), content_type="application/gzip")
    response["Content-Disposition"] = f'attachment; filename="{name}.tar.gz"'
    return response


@login_required
@vary_on_headers("HX-Request")
def triage_queue(request):
    tab = "reviewed" if request.GET.get("tab") == "reviewed" else "open"
    if tab == "open":
        page = paging.seek(selectors.triage_queue(), sort="-end", size=PAGE_SIZE, **_cursor(request))
    else:
        page = paging.seek(selectors.reviews_recent(), sort="-created", size=PAGE_SIZE, **_cursor(request))
    context = {"tab": tab, "page": page}
    if _partial(request, "queue-table"):
        return push_url(render(request, "diagnoses/triage_queue.html#queue-table", context), _canonical(request))
    return render(request, "diagnoses/triage_queue.html", context)


@login_required
@vary_on_headers("HX-Request")
def node_detail(request, cluster: str, name: str):
    node = selectors.node_find(cluster=cluster, name=name)
    if node is None:
        raise Http404("no such node")
    days = settings.FAULTLINE_REPEAT_OFFENDER_DAYS
    recent = selectors.node_root_causes(node, since=timezone.now() - timedelta(days=days))
    recent_count = sum(row["count"] for row in recent)
    page = paging.seek(selectors.node_attempts(node), sort="-end", size=20, **_cursor(request))
    context = {
        "node": node,
        "causes": selectors.node_root_causes(node),
        "recent_count": recent_count,
        "window_days": days,
        "threshold": settings.FAULTLINE_REPEAT_OFFENDER_COUNT,
        "repeat_offender": recent_count >= settings.FAULTLINE_REPEAT_OFFENDER_COUNT,
        "page": page,
        "at_fault": {
            row.pk
            for row in page.rows
            if row.current_diagnosis and node.pk in {n.pk for n in row.current_diagnosis.root_cause_nodes.all()}
        },
        "events": selectors.node_events_recent(node),
    }
    if _partial(request, "node-attempts"):
        return push_url(render(request, "diagnoses/node_detail.html#node-attempts", context), _canonical(request))
    return render(request, "diagnoses/node_detail.html", context)
