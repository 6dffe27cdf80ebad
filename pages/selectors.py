"""Reads of the triage pages: the lists as the pages show them, the attempt page's parts (evidence, timeline
events, reviews), a node's history, and the overview's counts."""

from datetime import UTC, date, datetime, time, timedelta

from django.db import connection
from django.db.models import BigIntegerField, Count, Exists, F, Func, OuterRef, Prefetch, Q, QuerySet, Sum

from diagnoses.models import (
    Attempt,
    Cluster,
    Diagnosis,
    Evidence,
    FlightRecorderSummary,
    Job,
    Node,
    NodeEvent,
    Review,
    VerdictDay,
    VerdictNodeDay,
)
from pages import paging
from pages.timeline import Event

# Lists and the attempt page --------------------------------------------------------------------------------------


def cluster_names() -> QuerySet:
    return Cluster.objects.values_list("name", flat=True)


def attempt_table() -> QuerySet[Attempt]:
    """Attempts as the HTML lists show them, with their verdict of record: one row each, its nodes prefetched, no
    documents and no diagnosis (the verdict is on the row)."""
    return (
        Attempt.objects.select_related("cluster", "job")
        .defer("record", "reason", "analysis_error")
        .prefetch_related(Prefetch("verdict_nodes", queryset=Node.objects.only("name")))
    )


def attempt_export() -> QuerySet[Attempt]:
    """Attempts as the exports write them: the list's row, the engine's diagnosis beside the verdict (joined, not
    a query per row) and the verdict's reviewer."""
    return (
        Attempt.objects.select_related("cluster", "job", "current_diagnosis", "verdict_review__reviewer")
        .defer("record", "reason", "analysis_error", "current_diagnosis__document_json")
        .prefetch_related(Prefetch("verdict_nodes", queryset=Node.objects.only("name")))
    )


def triage_queue() -> QuerySet[Attempt]:
    """Attempts that need a person: ambiguous or unattributed and not reviewed, or the engine now disagrees with
    their review (``Attempt.needs_review``, kept by ``diagnoses/services/verdicts.py``)."""
    return attempt_table().filter(needs_review=True)


def reviews_recent() -> QuerySet[Review]:
    return Review.objects.select_related("reviewer", "diagnosis__attempt__cluster", "diagnosis__attempt__job").defer(
        "diagnosis__document_json", "diagnosis__attempt__record"
    )


def attempt_page(pk: int) -> Attempt | None:
    """The attempt with what its page shows at once (its current diagnosis and rule-set revision, its verdict of
    record and who gave it)."""
    return (
        Attempt.objects.select_related(
            "cluster", "job", "current_diagnosis__revision__ruleset", "verdict_review__reviewer"
        )
        .defer("current_diagnosis__revision__text")
        .filter(pk=pk)
        .first()
    )


def job_find(*, cluster: str, job_id: str) -> Job | None:
    return Job.objects.select_related("cluster").filter(cluster__name=cluster, job_id=job_id).first()


def job_attempts(job_id: int) -> list[Attempt]:
    """Every attempt of one job (its first run, then its requeues and restarts) in order, as the lists show them,
    each with its verdict of record."""
    return list(attempt_table().filter(job_id=job_id).order_by("number", "start", "pk"))


def attempt_node_names(attempt: Attempt) -> list[str]:
    return sorted(attempt.nodes.values_list("name", flat=True))


def evidence_trail(diagnosis: Diagnosis) -> list[Evidence]:
    return list(Evidence.objects.filter(diagnosis=diagnosis).select_related("node").order_by("position"))


class Microseconds(Func):
    """A time as whole microseconds since 1970-01-01 UTC. Read as a number, a time skips Django's loader of
    ``timestamptz``, which parses each value in Python: 10,000 calls for a 1,024-node attempt's timeline
    (docs/performance.md, "Pages: the 1,024-node attempt page")."""

    output_field = BigIntegerField()
    template = "(EXTRACT(EPOCH FROM %(expressions)s) * 1000000)::bigint"

    # Django stores times in SQLite as text in UTC: 'YYYY-MM-DD HH:MM:SS', then '.ffffff' unless it is zero. The
    # whole seconds are read from the day number (SQLite reads a fraction to the millisecond only), the microseconds
    # from the text after them.
    sqlite_template = (
        "(CAST(ROUND((julianday(substr(%(expressions)s, 1, 19)) - 2440587.5) * 86400) AS INTEGER) * 1000000"
        " + CAST(substr(%(expressions)s || '.000000', 21, 6) AS INTEGER))"
    )

    def as_sqlite(self, compiler, connection, **extra_context):
        return self.as_sql(compiler, connection, template=self.sqlite_template, **extra_context)

    def get_db_converters(self, connection):
        return []  # the database's integer is read as an int already: no call per value


EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def timeline_events(diagnosis: Diagnosis) -> list[Event]:
    """The diagnosis's events as the timeline takes them, in no order; their times read as numbers
    (``Microseconds``)."""
    times = {"at": Microseconds("time"), "at_low": Microseconds("time_low"), "at_high": Microseconds("time_high")}
    fields = ["node__name", "at", "role", "rule", "text", "ref", "count", "kind", "pk", "time_approx", "at_low"]
    events = NodeEvent.objects.filter(diagnosis=diagnosis).annotate(**times).order_by()  # the layout orders them
    rows = list(events.values_list(*fields, "at_high"))
    # each time made a datetime once: many events share one (a thousand nodes' timeouts)
    values = {row[1] for row in rows} | {row[10] for row in rows} | {row[11] for row in rows}
    moments = {value: None if value is None else EPOCH + timedelta(microseconds=value) for value in values}
    return [
        Event(node, moments[at], role, rule, text, ref, count, kind, pk, approx, moments[low], moments[high])
        for node, at, role, rule, text, ref, count, kind, pk, approx, low, high in rows
    ]


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


def attempt_verdict_nodes(attempt: Attempt) -> list[str]:
    return sorted(attempt.verdict_nodes.values_list("name", flat=True))


def attempt_reviews(attempt: Attempt) -> list[Review]:
    """Every review of the attempt's diagnoses (any rule-set revision), withdrawn ones too, newest first."""
    return list(
        Review.objects.filter(diagnosis__attempt=attempt)
        .select_related("reviewer", "withdrawn_by", "diagnosis__revision__ruleset")
        .defer("diagnosis__document_json", "diagnosis__revision__text")
    )


def review_of_attempt(*, attempt_id: int, review_id: int) -> Review | None:
    return Review.objects.select_related("diagnosis").filter(pk=review_id, diagnosis__attempt_id=attempt_id).first()


def failures_recent(*, limit: int = 10) -> list[Attempt]:
    """The attempts that ended last, newest first, as the lists show them."""
    return list(attempt_table().order_by("-end", "-pk")[:limit])


def search(q: str, *, limit: int = 20) -> dict[str, list]:
    """What a search from the header finds, ``limit`` of each at most: ``attempts`` whose job id starts with ``q`` or
    whose job name holds it (newest first), ``nodes`` whose name holds it, ``users`` whose name starts with it."""
    attempts = attempt_table().filter(Q(job__job_id__istartswith=q) | Q(job__name__icontains=q))
    nodes = Node.objects.select_related("cluster").filter(name__icontains=q).order_by("name", "pk")
    users = Job.objects.filter(user__istartswith=q).order_by("user").values_list("user", flat=True).distinct()
    return {
        "attempts": list(attempts.order_by("-end", "-pk")[:limit]),
        "nodes": list(nodes[:limit]),
        "users": list(users[:limit]),
    }


def node_find(*, cluster: str, name: str) -> Node | None:
    return Node.objects.select_related("cluster").filter(cluster__name=cluster, name=name).first()


def node_root_causes(node: Node, *, since: datetime) -> list[dict]:
    """How often the node was the root cause (the attempts' verdicts of record), by domain and subdomain, most
    first: ``count`` in all, ``recent`` of attempts that ended since ``since``."""
    attempts = Attempt.objects.filter(pk__in=_verdict_links(node))
    rows = attempts.values(domain=F("verdict_domain"), subdomain=F("verdict_subdomain")).annotate(
        count=Count("pk"), recent=Count("pk", filter=Q(end__gte=since))
    )
    return list(rows.order_by("-count", "subdomain"))


def repeat_offenders(attempt: Attempt, *, since: datetime, named: bool = False) -> dict[str, int]:
    """Of the attempt's nodes (``named``: of those its verdict of record names), how many attempts that ended since
    ``since`` each was the root cause of, by name (a node never named is left out), as /metrics counts them
    (``handoffs.selectors.repeat_offenders``): the window's whole days from the nodes' daily rollup
    (``VerdictNodeDay``), the rest of its first day from the verdicts of the attempts that ended in it. One statement;
    on PostgreSQL the node and attempt ids are arrays, which the planner reads as the few rows they are (a thousand-node
    attempt costs tens of milliseconds at a million attempts, docs/performance.md)."""
    whole = datetime.combine(since.astimezone(UTC).date() + timedelta(days=1), time.min, tzinfo=UTC)
    through = (Attempt.verdict_nodes if named else Attempt.nodes).through._meta.db_table
    links, attempts = Attempt.verdict_nodes.through._meta.db_table, Attempt._meta.db_table
    nodes = f"SELECT node_id FROM {through} WHERE attempt_id = %s"
    ended = f'SELECT id FROM {attempts} WHERE "end" >= %s AND "end" < %s'
    within = (lambda ids: f"= ANY(ARRAY({ids}))") if connection.vendor == "postgresql" else (lambda ids: f"IN ({ids})")
    sql = f"""
        SELECT node.name, SUM(counted.n) FROM (
            SELECT node_id, attempts AS n FROM {VerdictNodeDay._meta.db_table}
            WHERE day >= %s AND attempts > 0 AND node_id {within(nodes)}
            UNION ALL
            SELECT node_id, 1 FROM {links} WHERE attempt_id {within(ended)} AND node_id {within(nodes)}
        ) counted JOIN {Node._meta.db_table} node ON node.id = counted.node_id
        GROUP BY node.name"""
    with connection.cursor() as cursor:
        cursor.execute(sql, [whole.date(), attempt.pk, since, whole, attempt.pk])
        return {name: int(count) for name, count in cursor.fetchall()}


def _verdict_links(node: Node) -> QuerySet:
    return Attempt.verdict_nodes.through.objects.filter(node=node).values("attempt_id")


def node_attempts(node: Node) -> QuerySet[Attempt]:
    """The attempts that ran on the node, newest first."""
    ran = Attempt.nodes.through.objects.filter(node=node).values("attempt_id")
    return attempt_table().filter(pk__in=ran)


CAUSE_ROLES = ("root_cause", "candidate")  # the events that make a node a root cause (or one of the candidates)
EVENT_FIELDS = ("time", "time_approx", "time_low", "time_high", "role", "rule", "text", "ref", "count", "diagnosis_id")


def node_causes(node: Node, *, limit: int = 20) -> list[dict]:
    """The node's own causes: the attempts whose verdict of record names it as the root cause, newest first, each
    with the events on the node that made it one (root cause or candidate in the attempt's current diagnosis; none
    when a review named the node and the engine did not)."""
    newest = Attempt.objects.filter(pk__in=_verdict_links(node)).order_by("-end", "-pk")[:limit]
    attempts = list(
        newest.select_related("job")
        .only("number", "end", "current_diagnosis_id", "verdict_source", "verdict_outcome", "verdict_domain",
              "verdict_subdomain", "job__job_id")
    )  # fmt: skip
    events: dict[int, list[NodeEvent]] = {}
    current = newest.values("current_diagnosis_id")
    cause_events = NodeEvent.objects.filter(node=node, diagnosis_id__in=current, role__in=CAUSE_ROLES)
    for event in cause_events.only(*EVENT_FIELDS).order_by("time", "pk"):
        events.setdefault(event.diagnosis_id, []).append(event)
    return [{"attempt": attempt, "events": events.get(attempt.current_diagnosis_id, [])} for attempt in attempts]


def node_events_other(node: Node, *, role: str = "", limit: int = 30) -> list[NodeEvent]:
    """The node's latest other events in its attempts' current diagnoses (not the causes ``node_causes`` lists):
    of one ``role``, or of every role but teardown (the noise of jobs torn down after a fault elsewhere) when
    ``role`` is empty, or of every role when it is ``all``."""
    # "some attempt's current diagnosis" as a semi-join: the planner then estimates it well and walks the node's
    # events newest first (index event_node_time) instead of reading all of them and sorting (docs/performance.md)
    current = Attempt.objects.filter(current_diagnosis_id=OuterRef("diagnosis_id"))
    events = NodeEvent.objects.filter(Exists(current), node=node)
    events = events.exclude(role__in=CAUSE_ROLES, diagnosis__attempt__in=_verdict_links(node))
    if role == "":
        events = events.exclude(role="teardown")
    elif role != "all":
        events = events.filter(role=role)
    return list(
        events.select_related("diagnosis__attempt__job")
        .only(*EVENT_FIELDS, "diagnosis__attempt__number", "diagnosis__attempt__job__job_id")
        .order_by("-time", "-pk")[:limit]
    )


# Overview ----------------------------------------------------------------------------------------


def failures_by_day(*, first: date) -> list[dict]:
    """Attempts that ended on the day ``first`` or after, counted by day and by the outcome, domain and subdomain of
    their verdict of record ("" when they have none): the daily rollup's rows (``VerdictDay``), one read for every
    panel of the overview."""
    return list(
        VerdictDay.objects.filter(day__gte=first, attempts__gt=0)
        .values("day", "outcome", "domain", "subdomain")
        .annotate(count=Sum("attempts"))
        .order_by()
    )


def top_fault_nodes(*, first: date, limit: int = 8) -> list[dict]:
    """The nodes most often at the root cause (verdicts of record) of attempts that ended on the day ``first`` or
    after: the nodes' daily rollup (``VerdictNodeDay``)."""
    return list(
        VerdictNodeDay.objects.filter(day__gte=first, attempts__gt=0)
        .values(name=F("node__name"), cluster=F("node__cluster__name"))
        .annotate(count=Sum("attempts"))
        .order_by("-count", "name")[:limit]
    )


def backlog_size() -> int:
    """The triage queue's length, counted up to ``paging.COUNT_CAP + 1``."""
    return paging.count_bounded(triage_queue())


def review_verdicts(*, since: datetime) -> dict[str, int]:
    """Reviews given since ``since`` and not withdrawn, by verdict (every verdict present, zero when none), with the
    corrections that picked one of the diagnosis's own candidates apart: ``candidate``, not ``corrected``."""
    reviews = Review.objects.filter(created__gte=since, withdrawn=None)
    counts = dict(reviews.values_list("verdict").annotate(count=Count("pk")).order_by())
    verdicts = {verdict: counts.get(verdict, 0) for verdict in Review.Verdict.values}
    verdicts["candidate"] = reviews.filter(picked_candidate=True).count()
    verdicts[Review.Verdict.CORRECTED] -= verdicts["candidate"]
    return verdicts
