"""Reads of the store: the querysets the API lists, clusters with where their discovery stands, an attempt by
its id or name, and an attempt's stored bundle (its context, the lines around a piece of evidence).
Nothing here gathers or writes. (The pages' own reads are ``pages.selectors``.)"""

import json
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta
from itertools import islice

from django.conf import settings
from django.db.models import Count, Prefetch, Q, QuerySet

from diagnoses import bundle_store, comparisons
from diagnoses.models import (
    Attempt,
    Cluster,
    Diagnosis,
    Evidence,
    Job,
    Lead,
    LeadSet,
    Node,
    NodeEvent,
    Review,
    Source,
    Template,
    TemplateCluster,
)
from engine.bundle import load_bundle
from engine.context import Attempt as ParsedAttempt
from engine.context import AttemptContext, History, NodeVerdict, PreviousAttempt
from leads.mining import SUCCEEDED
from rules.engine_limits import bundle_limits

EXCERPT_LINE_CAP = 2000  # characters shown of one line


def cluster_list() -> QuerySet[Cluster]:
    return Cluster.objects.all()


def cluster_status_list() -> QuerySet[Cluster]:
    """Clusters with their sources and their attempts' analysis backlog (``pending``, ``failed``)."""
    waiting = [Attempt.Analysis.QUEUED, Attempt.Analysis.ANALYSING]
    return (
        Cluster.objects.prefetch_related("sources")
        .annotate(
            pending=Count("attempts", filter=Q(attempts__analysis_state__in=waiting)),
            failed=Count("attempts", filter=Q(attempts__analysis_state=Attempt.Analysis.FAILED)),
        )
        .order_by("name")  # Meta.ordering does not apply to a query with aggregates
    )


def cluster_status(cluster: Cluster, *, now: datetime) -> dict:
    """Where a cluster's discovery stands (a cluster of ``cluster_status_list``): ``state`` is ``uploads``
    (no scheduler), ``disabled``, ``polling``, ``backing_off`` (failed polls; ``next_poll`` is the retry),
    ``new`` (never polled) or ``ok``; ``lag_seconds`` is the time since the last successful poll."""
    if not cluster.has_scheduler:
        state = "uploads"
    elif not cluster.enabled:
        state = "disabled"
    elif cluster.polling_since is not None:
        state = "polling"
    elif cluster.failures:
        state = "backing_off"
    elif cluster.last_poll is None:
        state = "new"
    else:
        state = "ok"
    lag = None if cluster.last_success is None else int((now - cluster.last_success).total_seconds())
    return {
        "state": state,
        "last_poll": cluster.last_poll,
        "last_success": cluster.last_success,
        "lag_seconds": lag,
        "next_poll": cluster.next_poll,
        "failures": cluster.failures,
        "last_error": cluster.last_error,
        "last_found": cluster.last_found,
        "skipped": cluster.skipped,
        "pending": cluster.pending,
        "failed": cluster.failed,
        "sources": [source_status(source, now=now) for source in cluster.sources.all()],
    }


def source_status(source: Source, *, now: datetime) -> dict:
    """A source's health: ``backing_off`` (not asked before ``retry_after``), ``failing`` (asked again at the
    next gather), ``unused`` (never asked yet) or ``ok``."""
    if source.retry_after is not None and source.retry_after > now:
        state = "backing_off"
    elif source.failures:
        state = "failing"
    elif source.last_ok is None:
        state = "unused"
    else:
        state = "ok"
    return {
        "name": source.name,
        "role": source.role,
        "kind": source.kind,
        "state": state,
        "failures": source.failures,
        "last_error": source.last_error,
        "last_failure": source.last_failure,
        "last_ok": source.last_ok,
        "retry_after": source.retry_after,
    }


def job_list() -> QuerySet[Job]:
    return Job.objects.select_related("cluster")


def attempt_list() -> QuerySet[Attempt]:
    """Attempts with their current diagnosis and their verdict of record (``Attempt.verdict_*``)."""
    return Attempt.objects.select_related(
        "cluster", "job", "current_diagnosis", "verdict_review__reviewer"
    ).prefetch_related(
        Prefetch("nodes", queryset=Node.objects.only("name")),
        Prefetch("current_diagnosis__root_cause_nodes", queryset=Node.objects.only("name")),
        Prefetch("verdict_nodes", queryset=Node.objects.only("name")),
    )


def diagnosis_list() -> QuerySet[Diagnosis]:
    return Diagnosis.objects.select_related("revision__ruleset").prefetch_related(
        Prefetch("root_cause_nodes", queryset=Node.objects.only("name"))
    )


def evidence_list() -> QuerySet[Evidence]:
    return Evidence.objects.select_related("node")


def node_event_list() -> QuerySet[NodeEvent]:
    return NodeEvent.objects.select_related("node")


def review_list() -> QuerySet[Review]:
    return Review.objects.select_related("reviewer", "withdrawn_by")


def nodes_named_root_cause() -> QuerySet:
    """The ids of the nodes some attempt's verdict of record names as its root cause."""
    return Attempt.verdict_nodes.through.objects.values("node_id")


def attempt_find(key: str) -> Attempt | None:
    """An attempt by id or by ``CLUSTER/JOB_ID[#ATTEMPT]`` (attempt 0 when the number is left out)."""
    if key.isdigit():
        return Attempt.objects.filter(pk=int(key)).first()
    cluster, _, job = key.partition("/")
    job_id, _, number = job.partition("#")
    if number and not number.isdigit():
        return None
    return Attempt.objects.filter(cluster__name=cluster, job__job_id=job_id, number=int(number or 0)).first()


class NotGathered(Exception):
    """The attempt was found by polling and its bundle is not written yet (its analysis gathers it)."""


@contextmanager
def attempt_context(attempt: Attempt) -> Iterator[AttemptContext]:
    """The attempt's stored bundle, read: what its analysis, a backtest or a trial run the engine on, within the
    block (its logs are read as the engine goes; with an object store, from the machine's cache, held meanwhile). It
    is never gathered here: raises ``NotGathered`` (found by polling, not gathered yet) or ``BundleError``."""
    if attempt.discovery is not None and attempt.gathered is None:
        raise NotGathered(f"{attempt} is not gathered yet: its analysis gathers it from the cluster's sources")
    with bundle_store.local(attempt.bundle) as path:
        yield load_bundle(path, limits=bundle_limits())


def attempt_history(attempt: Attempt, *, days: int) -> History:
    """What the store knows of the attempt's nodes and job before it started, as gathering writes it into the
    bundle (``history/``, docs/bundles.md): each verdict of record that named one of its nodes, of an attempt that
    ended in the ``days`` before it started, and every previous attempt of its job with its verdict, in a stable
    order."""
    return _history(attempt.nodes.all(), Q(job_id=attempt.job_id), number=attempt.number, start=attempt.start,
                    days=days, itself=attempt.pk)  # fmt: skip


def record_history(record: ParsedAttempt, *, days: int) -> History:
    """``attempt_history`` of an attempt not stored yet, from its record (an uploaded bundle's ``attempt.json``)."""
    nodes = Node.objects.filter(cluster__name=record.cluster, name__in=record.nodes)
    job = Q(cluster__name=record.cluster, job__job_id=record.job_id)
    return _history(nodes, job, number=record.attempt, start=record.start, days=days, itself=None)


def _history(ran: QuerySet[Node], job: Q, *, number: int, start: datetime, days: int, itself: int | None) -> History:
    since = start - timedelta(days=days)
    links = Attempt.verdict_nodes.through.objects.filter(
        node__in=ran, attempt__end__gte=since, attempt__end__lt=start
    ).exclude(attempt_id=itself)
    rows = links.values_list(
        "node__name", "attempt__cluster__name", "attempt__job__job_id", "attempt__number", "attempt__end",
        "attempt__verdict_outcome", "attempt__verdict_domain", "attempt__verdict_subdomain", "attempt__verdict_source",
    )  # fmt: skip
    verdicts = sorted(rows, key=lambda row: (row[0], row[4], row[1], row[2], row[3]))
    nodes = tuple(
        NodeVerdict(node=node, cluster=cluster, job_id=job_id, attempt=number, end=end, outcome=outcome, domain=domain,
                    subdomain=subdomain, reviewed=source == Attempt.VerdictSource.REVIEW,
                    ref=f"history/nodes.json#{index}")
        for index, (node, cluster, job_id, number, end, outcome, domain, subdomain, source) in enumerate(verdicts)
    )  # fmt: skip
    previous = (
        Attempt.objects.filter(job, number__lt=number)
        .prefetch_related(Prefetch("verdict_nodes", queryset=Node.objects.only("name")))
        .order_by("number", "start", "pk")
    )
    attempts = tuple(
        PreviousAttempt(attempt=one.number, start=one.start, end=one.end, state=one.state, outcome=one.verdict_outcome,
                        domain=one.verdict_domain, subdomain=one.verdict_subdomain,
                        nodes=tuple(sorted(node.name for node in one.verdict_nodes.all())),
                        reviewed=one.verdict_source == Attempt.VerdictSource.REVIEW,
                        ref=f"history/attempts.json#{index}")
        for index, one in enumerate(previous)
    )  # fmt: skip
    return History(window_days=days, nodes=nodes, attempts=attempts)


def history_attempts(*, attempt: Attempt, refs: list[str]) -> dict[str, Attempt]:
    """The earlier attempts that ``history/nodes.json#<index>`` refs of the attempt's bundle name (the evidence of a
    history rule), by ref; a ref whose verdict or attempt is not found is left out."""
    wanted = {ref: int(ref.rsplit("#", 1)[1]) for ref in refs if ref.startswith("history/nodes.json#")
              and ref.rsplit("#", 1)[1].isdigit()}  # fmt: skip
    stream = bundle_store.open_file(attempt.bundle, "history/nodes.json") if wanted else None
    if stream is None:
        return {}
    with stream:
        try:
            verdicts = json.loads(stream.read(bundle_limits().json_bytes)).get("verdicts", [])
        except (ValueError, AttributeError):
            return {}
    found = {}
    for ref, index in wanted.items():
        verdict = verdicts[index] if index < len(verdicts) and isinstance(verdicts[index], dict) else {}
        earlier = Attempt.objects.select_related("job").filter(
            cluster__name=verdict.get("cluster"), job__job_id=verdict.get("job_id"), number=verdict.get("attempt")
        )
        if (one := earlier.first()) is not None:
            found[ref] = one
    return found


def _same(attempt: Attempt, key: str) -> Q | None:
    """What an earlier attempt shares with ``attempt`` under one of ``COMPARISON_KEYS`` (None when ``attempt`` lacks
    the fields it needs)."""
    if key == "job":
        return Q(job_id=attempt.job_id)
    if key == "name and user" and attempt.name and attempt.user:
        return Q(cluster_id=attempt.cluster_id, name=attempt.name, user=attempt.user)
    if key == "name" and attempt.name:
        return Q(cluster_id=attempt.cluster_id, name=attempt.name)
    return None


def attempt_last_good(attempt: Attempt) -> tuple[Attempt, str] | None:
    """The last attempt that succeeded before this one started, and the key it was found by: the first of
    ``FAULTLINE_COMPARE_BY`` that finds one (``COMPARISON_KEYS``: ``job``, an earlier attempt of the same job; ``name
    and user``, the same job name and user on the same cluster; ``name``, the same job name on the same cluster);
    None when none does."""
    earlier = Attempt.objects.select_related("job", "cluster").filter(state__in=SUCCEEDED, start__lt=attempt.start)
    earlier = earlier.exclude(pk=attempt.pk).order_by("-end", "-pk")
    for key in settings.FAULTLINE_COMPARE_BY:
        same = _same(attempt, key)
        good = earlier.filter(same).first() if same is not None else None
        if good is not None:
            return good, key
    return None


def attempt_changes(attempt: Attempt) -> dict | None:
    """What changed since the attempt's job last worked (``diagnoses/comparisons.py``), read from both bundles; None
    without an earlier successful attempt. Raises ``NotGathered`` or ``BundleError`` when a bundle cannot be read."""
    found = attempt_last_good(attempt)
    if found is None:
        return None
    good, matched_by = found
    with attempt_context(attempt) as now, attempt_context(good) as before:
        changes = comparisons.compare(now, before)
    return {
        "attempt": {"id": attempt.pk, "job_id": attempt.job.job_id, "number": attempt.number},
        "good": {"id": good.pk, "job_id": good.job.job_id, "number": good.number, "state": good.state,
                 "end": good.end, "matched_by": matched_by},
        **changes,
    }  # fmt: skip


def bundle_excerpt(*, attempt: Attempt, ref: str, context: int = 5) -> list[dict]:
    """The lines ``context`` before and after ``ref`` (``logs/node02/syslog.log:4182``) in the attempt's bundle.

    Lines are decoded leniently (invalid UTF-8 replaced); an unknown or unsafe path gives no lines.
    """
    path, _, number = ref.rpartition(":")
    if not number.isdigit() or not path:
        return []
    line = int(number)
    stream = bundle_store.open_file(attempt.bundle, path)
    if stream is None:
        return []
    first = max(1, line - context)
    with stream:
        lines = islice(_capped_lines(stream, EXCERPT_LINE_CAP * 4), first - 1, line + context)
        return [
            {"line": first + offset, "text": raw.rstrip(b"\r\n").decode("utf-8", "replace")[:EXCERPT_LINE_CAP]}
            for offset, raw in enumerate(lines)
        ]


def _capped_lines(stream, cap: int):
    """The stream's lines, each cut at ``cap`` bytes: the rest of a longer line is skipped, never held."""
    while line := stream.readline(cap):
        if not line.endswith(b"\n"):
            while (rest := stream.readline(1 << 20)) and not rest.endswith(b"\n"):
                pass
        yield line


# Leads and failure patterns (docs/leads.md) --------------------------------------------------------------------

PATTERN_ORDERS = {"attempts": ("-attempts", "id"), "recent": ("-last_seen", "id")}


def lead_set_of(diagnosis: Diagnosis) -> LeadSet | None:
    """The diagnosis's leads with their templates, or None."""
    lead_set = LeadSet.objects.filter(diagnosis=diagnosis).first()
    if lead_set is not None:
        lead_set.lead_list = list(lead_set.leads.select_related("template").order_by("position"))
    return lead_set


def lead_of_attempt(*, attempt_id: int, lead_id: int) -> Lead | None:
    """A lead of the attempt's current diagnosis (for the lines around it)."""
    return (
        Lead.objects.select_related("lead_set__diagnosis__attempt")
        .filter(pk=lead_id, lead_set__attempt_id=attempt_id)
        .first()
    )


def pattern_list(*, order: str = "attempts", status: str | None = Template.Status.NEW) -> QuerySet[Template]:
    """The failure patterns: templates among the leads of at least one attempt now, by ``order`` (``attempts``: how
    many attempts it would explain; ``recent``: last seen); ``status`` None for every status."""
    patterns = Template.objects.filter(attempts__gt=0).select_related("assignee")
    if status:
        patterns = patterns.filter(status=status)
    return patterns.order_by(*PATTERN_ORDERS.get(order, PATTERN_ORDERS["attempts"]))


def pattern_get(key: str) -> Template | None:
    return Template.objects.select_related("assignee").filter(key=key).first()


def pattern_clusters(templates: list[Template]) -> dict[int, list[str]]:
    """The clusters of each pattern's attempts, by template id, most attempts first."""
    rows = (
        TemplateCluster.objects.filter(template__in=templates, attempts__gt=0)
        .order_by("template_id", "-attempts", "cluster__name")
        .values_list("template_id", "cluster__name")
    )
    clusters: dict[int, list[str]] = {template.pk: [] for template in templates}
    for template_id, name in rows:
        clusters[template_id].append(name)
    return clusters


def pattern_leads(template: Template) -> QuerySet[Lead]:
    """The current leads of the pattern's attempts (among their first ``PATTERN_LEADS``), newest attempts first."""
    return (
        Lead.objects.filter(
            template=template, position__lte=LeadSet.PATTERN_LEADS, lead_set__current=True, lead_set__requested=False
        )
        .select_related("lead_set__attempt__cluster", "lead_set__attempt__job")
        .order_by("-lead_set__attempt__end", "-lead_set__attempt_id")
    )


def pattern_attempt_ids(template: Template) -> list[int]:
    """Every attempt of the pattern, newest first."""
    return list(pattern_leads(template).values_list("lead_set__attempt_id", flat=True))
