"""Reads of the triage pages: the lists as the pages show them, the attempt page's parts (evidence, timeline
events, reviews), a node's history, and the overview's counts."""

from datetime import datetime

from django.db.models import Count, Exists, F, OuterRef, Prefetch, QuerySet
from django.db.models.functions import TruncDate

from diagnoses.models import Attempt, Cluster, Diagnosis, Evidence, FlightRecorderSummary, Node, NodeEvent, Review
from pages import paging
from pages.timeline import Event

TRIAGE_OUTCOMES = (Diagnosis.Outcome.AMBIGUOUS, Diagnosis.Outcome.UNATTRIBUTED)


# Lists and the attempt page --------------------------------------------------------------------------------------


def cluster_names() -> QuerySet:
    return Cluster.objects.values_list("name", flat=True)


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
    fields = ["node__name", "time", "role", "rule", "text", "ref", "count", "kind"]
    fields += ["pk", "time_approx", "time_low", "time_high"]
    return [Event(*row) for row in NodeEvent.objects.filter(diagnosis=diagnosis).values_list(*fields)]


def flight_recorder_summary(diagnosis: Diagnosis) -> dict | None:
    """What the analysis recorded of the attempt's Flight Recorder dumps (None without dumps): one small row, whatever
    the number of ranks, rather than every rank's dump read again from the bundle."""
    return FlightRecorderSummary.objects.filter(diagnosis=diagnosis).values_list("summary", flat=True).first()


def evidence_of_attempt(*, attempt_id: int, evidence_id: int) -> Evidence | None:
    """A piece of evidence of one of the attempt's diagnoses."""
    return (
        Evidence.objects.select_related("diagnosis__attempt")
        .filter(pk=evidence_id, diagnosis__attempt_id=attempt_id)
        .first()
    )


def event_of_attempt(*, attempt_id: int, event_id: int) -> NodeEvent | None:
    """A node event of one of the attempt's diagnoses."""
    return (
        NodeEvent.objects.select_related("diagnosis__attempt", "node")
        .filter(pk=event_id, diagnosis__attempt_id=attempt_id)
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
        .only("time", "time_approx", "time_low", "time_high", "role", "rule", "text", "ref", "count",
              "diagnosis__attempt__number",
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
