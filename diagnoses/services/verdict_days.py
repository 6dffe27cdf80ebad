"""The daily rollup of the verdicts of record (``VerdictDay``): every attempt counts once, in the row of its day (its
end, UTC), cluster, verdict and place in the triage queue. The overview and ``/metrics`` read these few rows instead of
aggregating a million attempts.

It stays exact because each change to what an attempt's row is keyed on moves the attempt in the same transaction:
``attempt_create`` counts a new attempt, ``attempt_verdict_update`` (diagnoses/services/verdicts.py) moves it when
its verdict, queue place or current diagnosis changes, and a deletion (``attempt_deleted``, any deletion through the
ORM: the admin, a job's or cluster's cascade) or an admin's edit of its end or cluster takes it out first.
The counts change by ``attempts = attempts + n`` in one upsert (``diagnoses.sums``), so workers recording at once lose
nothing.
``verdict_days_rebuild`` (``manage.py verdict_days``, migration 0009) builds it from the attempts.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from datetime import UTC, date, datetime

from django.db import connection, transaction
from django.db.models import Count
from django.db.models.functions import TruncDate

from diagnoses.models import Attempt, VerdictDay, VerdictNodeDay
from diagnoses.sums import sums_add

Key = tuple[date, int, str, str, str, bool]  # day, cluster, outcome, domain, subdomain, needs_review
KEY_COLUMNS = ("day", "cluster_id", "outcome", "domain", "subdomain", "needs_review")


def key_of(*, end: datetime, cluster_id: int, outcome: str, domain: str, subdomain: str, needs_review: bool) -> Key:
    """The row an attempt counts in."""
    return (end.astimezone(UTC).date(), cluster_id, outcome, domain, subdomain, needs_review)


def verdict_days_add(changes: dict[Key, int], nodes: dict[tuple[date, int], int] | None = None) -> None:
    """Add attempts to each row of ``changes`` and to each (day, node) of ``nodes`` (negative to take attempts out),
    one upsert per table; the rows in key order, so that two transactions moving attempts lock them in the same
    order."""
    rows = [(*key, n) for key, n in sorted(changes.items()) if n]
    sums_add(VerdictDay._meta.db_table, KEY_COLUMNS, ("attempts",), rows)
    rows = [(*key, n) for key, n in sorted((nodes or {}).items()) if n]
    sums_add(VerdictNodeDay._meta.db_table, ("day", "node_id"), ("attempts",), rows)


def verdict_days_move(
    old: Key | None, new: Key | None, *, nodes_before: Iterable[int] = (), nodes_after: Iterable[int] = ()
) -> None:
    """Move one attempt from the row ``old`` to the row ``new`` (None: not counted before, or no longer), and from
    its verdict's nodes ``nodes_before`` (ids, on the day of ``old``) to ``nodes_after`` (on the day of ``new``)."""
    changes: Counter = Counter()
    nodes: Counter = Counter()
    for key, sign, ids in ((old, -1, nodes_before), (new, 1, nodes_after)):
        if key is not None:
            changes[key] += sign
            for node_id in ids:
                nodes[key[0], node_id] += sign
    verdict_days_add(changes, nodes)


def attempt_key(attempt_id: int) -> Key | None:
    """The row the attempt counts in as it is stored now (None: no such attempt)."""
    row = (
        Attempt.objects.filter(pk=attempt_id)
        .values_list("end", "cluster_id", "verdict_outcome", "verdict_domain", "verdict_subdomain", "needs_review")
        .first()
    )
    if row is None:
        return None
    end, cluster_id, outcome, domain, subdomain, needs_review = row
    return key_of(end=end, cluster_id=cluster_id, outcome=outcome, domain=domain, subdomain=subdomain,
                  needs_review=needs_review)  # fmt: skip


def attempt_node_ids(attempt_id: int) -> list[int]:
    """The nodes of the attempt's verdict of record, as stored now."""
    return list(Attempt.verdict_nodes.through.objects.filter(attempt_id=attempt_id).values_list("node_id", flat=True))


def attempt_count(attempt_id: int) -> None:
    """Count a new attempt (or one an admin edited) in its rows."""
    verdict_days_move(None, attempt_key(attempt_id), nodes_after=attempt_node_ids(attempt_id))


def attempt_uncount(attempt_id: int) -> None:
    """Take the attempt out of its rows (before it is deleted or edited); its row locked first."""
    list(Attempt.objects.select_for_update().filter(pk=attempt_id).values_list("pk"))
    verdict_days_move(attempt_key(attempt_id), None, nodes_before=attempt_node_ids(attempt_id))


def attempt_deleted(sender, instance: Attempt, **kwargs) -> None:
    """``pre_delete`` of an attempt (the deletion's transaction): take it out of the rollup."""
    attempt_uncount(instance.pk)


def verdict_days_counted(attempts=None) -> dict[Key, int]:
    """The rollup computed from scratch: the attempts of every row (``attempts``: the model class to read, a
    migration's historical one; default ``Attempt``)."""
    attempts = Attempt if attempts is None else attempts
    rows = (
        attempts.objects.annotate(day=TruncDate("end", tzinfo=UTC))
        .values_list("day", "cluster_id", "verdict_outcome", "verdict_domain", "verdict_subdomain", "needs_review")
        .annotate(count=Count("pk"))
        .order_by()
    )
    return {tuple(row[:6]): row[6] for row in rows}


def verdict_node_days_counted(attempts=None) -> dict[tuple[date, int], int]:
    """The nodes' rollup computed from scratch: attempts per (day, node) (``attempts`` as in
    ``verdict_days_counted``)."""
    links = (Attempt if attempts is None else attempts).verdict_nodes.through.objects
    rows = (
        links.annotate(day=TruncDate("attempt__end", tzinfo=UTC))
        .values_list("day", "node_id")
        .annotate(count=Count("pk"))
        .order_by()
    )
    return {(day, node_id): count for day, node_id, count in rows}


def verdict_days_stored() -> dict[Key, int]:
    """The rollup as stored, without the rows that count no attempt."""
    rows = VerdictDay.objects.exclude(attempts=0).values_list(*KEY_COLUMNS, "attempts")
    return {tuple(row[:6]): row[6] for row in rows}


def verdict_node_days_stored() -> dict[tuple[date, int], int]:
    rows = VerdictNodeDay.objects.exclude(attempts=0).values_list("day", "node_id", "attempts")
    return {(day, node_id): count for day, node_id, count in rows}


def verdict_days_rebuild(attempts=None, rollup=None, node_rollup=None) -> int:
    """Build both rollups again from the attempts (writers to the attempts wait meanwhile, on PostgreSQL); the number
    of rows. ``attempts``, ``rollup`` and ``node_rollup``: a migration's historical models (default ``Attempt``,
    ``VerdictDay`` and ``VerdictNodeDay``)."""
    rollup = VerdictDay if rollup is None else rollup
    node_rollup = VerdictNodeDay if node_rollup is None else node_rollup
    with transaction.atomic():
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute(f"LOCK TABLE {Attempt._meta.db_table} IN SHARE MODE")
                cursor.execute(f"LOCK TABLE {Attempt.verdict_nodes.through._meta.db_table} IN SHARE MODE")
        counted = verdict_days_counted(attempts)
        rollup.objects.all().delete()
        rollup.objects.bulk_create(
            [rollup(**dict(zip(KEY_COLUMNS, key, strict=True)), attempts=n) for key, n in counted.items()],
            batch_size=5000,
        )  # fmt: skip
        nodes = verdict_node_days_counted(attempts)
        node_rollup.objects.all().delete()
        node_rollup.objects.bulk_create(
            [node_rollup(day=day, node_id=node_id, attempts=n) for (day, node_id), n in nodes.items()],
            batch_size=5000,
        )
    return len(counted) + len(nodes)
