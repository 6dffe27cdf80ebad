"""Reads: the querysets the API and pages list, the pages' summaries, and an attempt's stored bundle (its
context, the lines around a piece of evidence). Nothing here gathers or writes."""

from datetime import datetime
from itertools import islice

from django.db.models import Count, Exists, F, OuterRef, Prefetch, Q, QuerySet
from django.db.models.functions import TruncDate

from diagnoses import bundle_store, paging
from diagnoses.models import Attempt, Cluster, Diagnosis, Evidence, Job, Node, NodeEvent, Review, Source
from diagnoses.timeline import Event
from engine.bundle import load_bundle
from engine.context import AttemptContext

EXCERPT_LINE_CAP = 2000  # characters shown of one line
TRIAGE_OUTCOMES = (Diagnosis.Outcome.AMBIGUOUS, Diagnosis.Outcome.UNATTRIBUTED)


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
    return Attempt.objects.select_related("cluster", "job", "current_diagnosis").prefetch_related(
        Prefetch("nodes", queryset=Node.objects.only("name")),
        Prefetch("current_diagnosis__root_cause_nodes", queryset=Node.objects.only("name")),
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
    return Review.objects.select_related("reviewer")


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


def attempt_context(attempt: Attempt) -> AttemptContext:
    """The attempt's stored bundle, read: what its analysis, a backtest or a trial run the engine on. It is
    never gathered here: raises ``NotGathered`` (found by polling, not gathered yet) or ``BundleError``."""
    if attempt.discovery is not None and attempt.gathered is None:
        raise NotGathered(f"{attempt} is not gathered yet: its analysis gathers it from the cluster's sources")
    return load_bundle(bundle_store.path_of(attempt.bundle))


def bundle_excerpt(*, attempt: Attempt, ref: str, context: int = 5) -> list[dict]:
    """The lines ``context`` before and after ``ref`` (``logs/node02/syslog.log:4182``) in the attempt's bundle.

    Lines are decoded leniently (invalid UTF-8 replaced); an unknown or unsafe path gives no lines.
    """
    path, _, number = ref.rpartition(":")
    if not number.isdigit() or not path:
        return []
    line = int(number)
    bundle = bundle_store.path_of(attempt.bundle).resolve()
    file = (bundle / path).resolve()
    if not file.is_relative_to(bundle) or not file.is_file():
        return []
    first = max(1, line - context)
    with open(file, "rb") as stream:
        lines = islice(stream, first - 1, line + context)
        return [
            {"line": first + offset, "text": raw.rstrip(b"\r\n").decode("utf-8", "replace")[:EXCERPT_LINE_CAP]}
            for offset, raw in enumerate(lines)
        ]


# Pages -------------------------------------------------------------------------------------------


def attempt_table() -> QuerySet[Attempt]:
    """Attempts as the HTML lists show them: one row each, root-cause nodes prefetched, no documents."""
    return (
        Attempt.objects.select_related("cluster", "job", "current_diagnosis")
        .defer("record", "reason", "analysis_error", "current_diagnosis__document_json")
        .prefetch_related(Prefetch("current_diagnosis__root_cause_nodes", queryset=Node.objects.only("name")))
    )


def triage_queue() -> QuerySet[Attempt]:
    """Ambiguous and unattributed attempts whose current diagnosis nobody has reviewed yet."""
    reviewed = Review.objects.filter(diagnosis=OuterRef("current_diagnosis"))
    return attempt_table().filter(current_diagnosis__outcome__in=TRIAGE_OUTCOMES).filter(~Exists(reviewed))


def reviews_recent() -> QuerySet[Review]:
    return Review.objects.select_related("reviewer", "diagnosis__attempt__cluster", "diagnosis__attempt__job").defer(
        "diagnosis__document_json", "diagnosis__attempt__record"
    )


def attempt_page(pk: int) -> Attempt | None:
    """The attempt with what its page shows at once (its current diagnosis and rule-set revision)."""
    return (
        Attempt.objects.select_related("cluster", "job", "current_diagnosis__revision__ruleset")
        .defer("current_diagnosis__revision__text")
        .filter(pk=pk)
        .first()
    )


def attempt_node_names(attempt: Attempt) -> list[str]:
    return sorted(attempt.nodes.values_list("name", flat=True))


def evidence_trail(diagnosis: Diagnosis) -> list[Evidence]:
    return list(Evidence.objects.filter(diagnosis=diagnosis).select_related("node").order_by("position"))


def timeline_events(diagnosis: Diagnosis) -> list[Event]:
    fields = ("node__name", "time", "role", "rule", "text", "ref", "count", "kind")
    return [Event(*row) for row in NodeEvent.objects.filter(diagnosis=diagnosis).values_list(*fields)]


def evidence_of_attempt(*, attempt_id: int, evidence_id: int) -> Evidence | None:
    """A piece of evidence of one of the attempt's diagnoses."""
    return (
        Evidence.objects.select_related("diagnosis__attempt")
        .filter(pk=evidence_id, diagnosis__attempt_id=attempt_id)
        .first()
    )


def attempt_reviews(attempt: Attempt) -> list[Review]:
    """Every review of the attempt's diagnoses (any rule-set revision), newest first."""
    return list(
        Review.objects.filter(diagnosis__attempt=attempt)
        .select_related("reviewer", "diagnosis__revision__ruleset")
        .defer("diagnosis__document_json", "diagnosis__revision__text")
    )


def node_find(*, cluster: str, name: str) -> Node | None:
    return Node.objects.select_related("cluster").filter(cluster__name=cluster, name=name).first()


def node_root_causes(node: Node, *, since: datetime | None = None) -> list[dict]:
    """How often the node was the root cause (current diagnoses), by domain and subdomain, most first."""
    diagnoses = Diagnosis.objects.filter(root_cause_nodes=node, attempt__current_diagnosis=F("pk"))
    if since is not None:
        diagnoses = diagnoses.filter(attempt__end__gte=since)
    return list(diagnoses.values("domain", "subdomain").annotate(count=Count("pk")).order_by("-count", "subdomain"))


def node_attempts(node: Node) -> QuerySet[Attempt]:
    """The attempts that ran on the node, newest first."""
    ran = Attempt.nodes.through.objects.filter(node=node).values("attempt_id")
    return attempt_table().filter(pk__in=ran)


def node_events_recent(node: Node, *, limit: int = 30) -> list[NodeEvent]:
    """The node's latest events in its attempts' current diagnoses."""
    return list(
        NodeEvent.objects.filter(node=node, diagnosis__attempt__current_diagnosis=F("diagnosis_id"))
        .select_related("diagnosis__attempt__job")
        .only("time", "role", "rule", "text", "ref", "count", "diagnosis__attempt__number",
              "diagnosis__attempt__job__job_id")
        .order_by("-time", "-pk")[:limit]
    )  # fmt: skip


# Overview ----------------------------------------------------------------------------------------


def failures_by_day(*, since: datetime) -> list[dict]:
    """Attempts that ended since ``since``, counted by day and by the outcome, domain and subdomain of
    their current diagnosis (None when they have none): one pass for every panel of the overview."""
    return list(
        Attempt.objects.filter(end__gte=since)
        .annotate(day=TruncDate("end"))
        .values(
            "day",
            outcome=F("current_diagnosis__outcome"),
            domain=F("current_diagnosis__domain"),
            subdomain=F("current_diagnosis__subdomain"),
        )
        .annotate(count=Count("pk"))
        .order_by()
    )


def top_fault_nodes(*, since: datetime, limit: int = 8) -> list[dict]:
    """The nodes most often at the root cause of attempts that ended since ``since``."""
    current = Attempt.objects.filter(end__gte=since).values("current_diagnosis")
    links = Diagnosis.root_cause_nodes.through.objects.filter(diagnosis__in=current)
    return list(
        links.values(name=F("node__name"), cluster=F("node__cluster__name"))
        .annotate(count=Count("pk"))
        .order_by("-count", "name")[:limit]
    )


def backlog_size() -> int:
    """The triage queue's length, counted up to ``paging.COUNT_CAP + 1``."""
    return paging.count_bounded(triage_queue())


def review_verdicts(*, since: datetime) -> dict[str, int]:
    """Reviews given since ``since``, by verdict (every verdict present, zero when none)."""
    counts = dict(
        Review.objects.filter(created__gte=since).values_list("verdict").annotate(count=Count("pk")).order_by()
    )
    return {verdict: counts.get(verdict, 0) for verdict in Review.Verdict.values}
