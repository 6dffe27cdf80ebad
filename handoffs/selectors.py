"""The hand-offs' reads: the counts the metrics expose, repeat offenders, the triage backlog, notification rules with
their incidents and deliveries, drains, and the node inventory with each node's drain."""

from __future__ import annotations

import json
from datetime import UTC, datetime, time, timedelta

from django.conf import settings
from django.db import connection
from django.db.models import Count, Max, OuterRef, Prefetch, Q, QuerySet, Subquery, Sum
from django.db.models.functions import Coalesce
from django.utils import timezone

from connectors.base import UnusableKind, connector_class
from diagnoses.models import (
    Attempt,
    Cluster,
    Diagnosis,
    EventCount,
    Lead,
    Node,
    Source,
    Template,
    VerdictDay,
    VerdictNodeDay,
)
from handoffs.models import Delivery, Drain, DrainPolicy, Incident, NotificationRule

NOT_DIAGNOSED = "none"  # the outcome label of an attempt without a diagnosis yet


# Metrics ---------------------------------------------------------------------------------------------------------


def attempts_by_verdict() -> list[dict]:
    """The stored (failed) attempts now, by cluster and the outcome, domain and subdomain of their verdict of record,
    read from the daily rollup (``VerdictDay``: a few rows per day, not every attempt): ``count``, and ``backlog``,
    those in the triage queue (``Attempt.needs_review``)."""
    rows = (
        VerdictDay.objects.values("cluster__name", "outcome", "domain", "subdomain")
        .annotate(count=Sum("attempts"), backlog=Sum("attempts", filter=Q(needs_review=True), default=0))
        .filter(count__gt=0)
        .order_by()
    )
    return [
        {
            "cluster": row["cluster__name"],
            "outcome": row["outcome"] or NOT_DIAGNOSED,
            "domain": row["domain"],
            "subdomain": row["subdomain"],
            "count": row["count"],
            "backlog": row["backlog"],
        }
        for row in rows
    ]


def event_counts() -> list[tuple[str, dict[str, str], float]]:
    """Every count of what happened (``EventCount``), as (name, labels, value)."""
    rows = EventCount.objects.values_list("name", "labels", "value").order_by("name", "labels")
    return [(name, json.loads(labels), value) for name, labels, value in rows]


def triage_backlog_by_cluster() -> dict[str, int]:
    """The triage queue's length per cluster: the attempts whose verdict of record waits for a review
    (``Attempt.needs_review``, as the queue page and ``faultline_triage_backlog`` count them)."""
    rows = Attempt.objects.filter(needs_review=True).values("cluster__name").annotate(count=Count("pk")).order_by()
    return {row["cluster__name"]: row["count"] for row in rows}


def analysis_failures_by_cluster() -> dict[str, int]:
    rows = (
        Attempt.objects.filter(analysis_state=Attempt.Analysis.FAILED)
        .values("cluster__name")
        .annotate(count=Count("pk"))
        .order_by()
    )
    return {row["cluster__name"]: row["count"] for row in rows}


def clusters_for_metrics() -> QuerySet[Cluster]:
    return Cluster.objects.only("name", "connector", "failures", "enabled")


def sources_health() -> QuerySet[Source]:
    return Source.objects.select_related("cluster").only("cluster__name", "name", "role", "kind", "failures")


def drained_by_cluster() -> dict[str, int]:
    rows = Drain.objects.filter(state=Drain.State.DRAINED).values("cluster__name").annotate(count=Count("pk"))
    return {row["cluster__name"]: row["count"] for row in rows.order_by()}


# Repeat offenders ------------------------------------------------------------------------------------------------


def repeat_offender_window() -> datetime:
    return timezone.now() - timedelta(days=settings.FAULTLINE_REPEAT_OFFENDER_DAYS)


def repeat_offenders() -> list[dict]:
    """Nodes that the verdicts of record of at least ``FAULTLINE_REPEAT_OFFENDER_COUNT`` attempts that ended in the last
    ``FAULTLINE_REPEAT_OFFENDER_DAYS`` days name as the root cause, most first: the window's whole days read from the
    nodes' daily rollup (``VerdictNodeDay``), the rest of its first day from the attempts; one statement (thousands of
    nodes may be offenders in a large store: only they leave the database)."""
    since = repeat_offender_window()
    whole = since.astimezone(UTC).date() + timedelta(days=1)
    links, attempts = Attempt.verdict_nodes.through._meta.db_table, Attempt._meta.db_table
    sql = f"""
        SELECT node.id, node.name, cluster.name, counted.n FROM (
            SELECT node_id, SUM(n) AS n FROM (
                SELECT node_id, attempts AS n FROM {VerdictNodeDay._meta.db_table} WHERE day >= %s
                UNION ALL
                SELECT link.node_id, 1 FROM {links} link JOIN {attempts} attempt ON attempt.id = link.attempt_id
                WHERE attempt."end" >= %s AND attempt."end" < %s
            ) counts GROUP BY node_id HAVING SUM(n) >= %s
        ) counted
        JOIN {Node._meta.db_table} node ON node.id = counted.node_id
        JOIN {Cluster._meta.db_table} cluster ON cluster.id = node.cluster_id
        ORDER BY counted.n DESC, cluster.name, node.name"""
    whole_start = datetime.combine(whole, time.min, tzinfo=UTC)
    with connection.cursor() as cursor:
        cursor.execute(sql, [whole, since, whole_start, settings.FAULTLINE_REPEAT_OFFENDER_COUNT])
        rows = cursor.fetchall()
    return [{"node_id": pk, "node": name, "cluster": cluster, "count": n} for pk, name, cluster, n in rows]


def diagnosis_current(diagnosis_id: int) -> Diagnosis | None:
    """The diagnosis with its attempt, when it is still its attempt's current one (a newer one replaces it)."""
    diagnosis = (
        Diagnosis.objects.select_related("attempt__cluster", "attempt__job")
        .defer("document_json")  # the hand-offs read the verdict's columns, never the document
        .prefetch_related(Prefetch("root_cause_nodes", queryset=Node.objects.select_related("cluster")))
        .filter(pk=diagnosis_id)
        .first()
    )
    return diagnosis if diagnosis is not None and diagnosis.attempt.current_diagnosis_id == diagnosis.pk else None


def diagnosis_repeat_offenders(diagnosis: Diagnosis) -> list[tuple[Node, int]]:
    """The diagnosis's root-cause nodes that are repeat offenders, each with the attempts in the window whose verdict of
    record names it (as the node page and ``faultline_repeat_offender_root_causes`` count them)."""
    nodes = list(diagnosis.root_cause_nodes.all())  # as ``diagnosis_current`` prefetched them, with their cluster
    if not nodes:
        return []
    rows = (
        Attempt.verdict_nodes.through.objects.filter(node__in=nodes, attempt__end__gte=repeat_offender_window())
        .values("node_id")
        .annotate(count=Count("attempt_id"))
        .filter(count__gte=settings.FAULTLINE_REPEAT_OFFENDER_COUNT)
    )
    counts = {row["node_id"]: row["count"] for row in rows}
    return [(node, counts[node.pk]) for node in nodes if node.pk in counts]


def node_recent_causes(node: Node, *, limit: int = 5) -> list[tuple[str, int, str, str]]:
    """The attempts in the repeat-offender window whose verdict of record names the node, newest first: (job id,
    attempt number, domain, subdomain) of ``limit`` of them at most, what a drain proposal cites."""
    links = Attempt.verdict_nodes.through.objects.filter(node=node, attempt__end__gte=repeat_offender_window())
    rows = links.order_by("-attempt__end", "-attempt_id").values_list(
        "attempt__job__job_id", "attempt__number", "attempt__verdict_domain", "attempt__verdict_subdomain"
    )
    return list(rows[:limit])


# Notifications ---------------------------------------------------------------------------------------------------


def notification_rules() -> QuerySet[NotificationRule]:
    return NotificationRule.objects.all()


def rules_enabled(trigger: str) -> list[NotificationRule]:
    return list(NotificationRule.objects.filter(enabled=True, trigger=trigger))


def incidents_recent(*, limit: int = 50) -> list[Incident]:
    return list(Incident.objects.select_related("rule").order_by("-opened", "-pk")[:limit])


def delivery_list() -> QuerySet[Delivery]:
    """The delivery log, newest first."""
    return Delivery.objects.select_related("incident__rule").order_by("-time", "-pk")


def deliveries_recent(*, limit: int = 100) -> list[Delivery]:
    return list(delivery_list()[:limit])


# Drains ----------------------------------------------------------------------------------------------------------


def drain_table() -> QuerySet[Drain]:
    return Drain.objects.select_related("cluster", "node", "attempt__job", "proposed_by", "decided_by", "resumed_by")


def drains_of_nodes(nodes: list[Node]) -> list[Drain]:
    return list(drain_table().filter(node__in=nodes))


def drains_waiting() -> list[Drain]:
    return list(drain_table().filter(state=Drain.State.PROPOSED).order_by("proposed", "pk"))


def drains_holding() -> list[Drain]:
    """Drains that hold a node now (approved or drained): what may be resumed."""
    return list(drain_table().filter(state__in=Drain.HOLDING).order_by("drained", "pk"))


def drains_history(*, limit: int = 100) -> list[Drain]:
    return list(drain_table().exclude(state__in=Drain.ACTIVE)[:limit])


def drain_policy_of(cluster: Cluster) -> DrainPolicy:
    """The cluster's policy (an unsaved default when an admin never set one)."""
    return DrainPolicy.objects.filter(cluster=cluster).first() or DrainPolicy(cluster=cluster)


def drain_policies() -> list[DrainPolicy]:
    policies = {p.cluster_id: p for p in DrainPolicy.objects.all()}
    return [policies.get(c.pk) or DrainPolicy(cluster=c) for c in Cluster.objects.all()]


def cluster_can_drain(cluster: Cluster) -> bool:
    """Whether the cluster's scheduler connector can drain nodes (Slurm, Kueue: ``connectors.base.NodeControl``)."""
    if not cluster.has_scheduler:
        return False
    try:
        cls = connector_class(cluster.connector)
    except UnusableKind:
        return False
    return all(callable(getattr(cls, method, None)) for method in ("drain_node", "resume_node"))


# Nodes -----------------------------------------------------------------------------------------------------------


def node_inventory(*, since: datetime) -> QuerySet[Node]:
    """Every node with what the inventory shows (the node list page and ``/api/v1/nodes``): ``attempt_count`` it ran,
    the one that ended ``last_end``, ``root_causes`` (the verdicts of record naming it), ``recent_causes`` of them
    ending since ``since``, and ``drain_state`` and ``drain_id`` of its active drain (proposed, approved or drained;
    empty when none). Each is a subquery of one node, so a page of nodes costs what its rows cost, whatever the
    number of attempts."""
    ran = Attempt.nodes.through.objects.filter(node_id=OuterRef("pk")).order_by().values("node_id")
    named = Attempt.verdict_nodes.through.objects.filter(node_id=OuterRef("pk")).order_by().values("node_id")
    drain = Drain.objects.filter(node_id=OuterRef("pk"), state__in=Drain.ACTIVE).order_by("-proposed", "-pk")
    return Node.objects.select_related("cluster").annotate(
        attempt_count=_count(ran),
        last_end=Subquery(ran.annotate(last=Max("attempt__end")).values("last")),
        root_causes=_count(named),
        recent_causes=_count(named.filter(attempt__end__gte=since)),
        drain_state=Subquery(drain.values("state")[:1]),
        drain_id=Subquery(drain.values("pk")[:1]),
    )


def _count(rows: QuerySet) -> Coalesce:
    return Coalesce(Subquery(rows.annotate(count=Count("pk")).values("count")), 0)


def pattern_leads_counted(diagnosis: Diagnosis) -> list:
    """The leads of a first diagnosis that counted it into a new (not known) pattern's day (``Lead.day_attempts``),
    with their templates."""
    return list(
        Lead.objects.select_related("template")
        .filter(lead_set__diagnosis=diagnosis, day_attempts__isnull=False, template__status=Template.Status.NEW)
        .order_by("position")
    )
