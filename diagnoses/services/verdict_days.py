"""The daily rollup of the verdicts of record (``VerdictDay``): every attempt counts once, in the row of its day (its
end, UTC), cluster, verdict, place in the triage queue and analysis latency. The overview and ``/metrics`` read these
few rows instead of aggregating a million attempts.

It stays exact because each change to what an attempt's row is keyed on moves the attempt in the same transaction:
``attempt_create`` counts a new attempt, ``attempt_verdict_update`` (diagnoses/services/verdicts.py) moves it when
its verdict, queue place or current diagnosis changes, and a deletion (``attempt_deleted``, any deletion through the
ORM: the admin, a job's or cluster's cascade) or an admin's edit of its end, cluster or arrival takes it out first.
The counts change by ``attempts = attempts + n`` in one upsert, so workers recording at once lose nothing.
``verdict_days_rebuild`` (``manage.py verdict_days``, migration 0009) builds it from the attempts.
"""

from __future__ import annotations

from collections import Counter
from datetime import UTC, date, datetime, timedelta

from django.db import connection, transaction
from django.db.models import Case, Count, DurationField, ExpressionWrapper, F, Sum, Value, When
from django.db.models.functions import TruncDate

from diagnoses.models import Attempt, Diagnosis, VerdictDay

Key = tuple[date, int, str, str, str, bool, int]  # day, cluster, outcome, domain, subdomain, needs_review, latency
KEY_COLUMNS = ("day", "cluster_id", "outcome", "domain", "subdomain", "needs_review", "latency")
MICROSECOND = timedelta(microseconds=1)


def latency_of(received: datetime, diagnosed: datetime | None) -> tuple[int, int]:
    """(bucket, microseconds) of an attempt received at ``received`` whose current diagnosis was made at
    ``diagnosed`` (None: not analysed)."""
    if diagnosed is None:
        return VerdictDay.NOT_ANALYSED, 0
    latency = diagnosed - received
    bound = next(
        (i for i, seconds in enumerate(VerdictDay.LATENCY_BUCKETS) if latency <= timedelta(seconds=seconds)),
        len(VerdictDay.LATENCY_BUCKETS),
    )
    return bound, latency // MICROSECOND


def key_of(*, end: datetime, cluster_id: int, outcome: str, domain: str, subdomain: str, needs_review: bool,
           received: datetime, diagnosed: datetime | None) -> tuple[Key, int]:  # fmt: skip
    """The row an attempt counts in, and its latency in microseconds."""
    bucket, micros = latency_of(received, diagnosed)
    return (end.astimezone(UTC).date(), cluster_id, outcome, domain, subdomain, needs_review, bucket), micros


def verdict_days_add(changes: dict[Key, tuple[int, int]]) -> None:
    """Add (attempts, microseconds) to each row of ``changes`` (negative to take attempts out), in one upsert; the
    rows in key order, so that two transactions moving attempts lock them in the same order."""
    rows = [(key, n, micros) for key, (n, micros) in sorted(changes.items()) if n or micros]
    if not rows:
        return
    table = VerdictDay._meta.db_table
    columns = ", ".join(KEY_COLUMNS)
    values = ", ".join(["(" + ", ".join(["%s"] * (len(KEY_COLUMNS) + 2)) + ")"] * len(rows))
    sql = (
        f"INSERT INTO {table} ({columns}, attempts, latency_us) VALUES {values} ON CONFLICT ({columns}) DO UPDATE "
        f"SET attempts = {table}.attempts + excluded.attempts, latency_us = {table}.latency_us + excluded.latency_us"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [value for key, n, micros in rows for value in (*key, n, micros)])


def verdict_days_move(old: tuple[Key, int] | None, new: tuple[Key, int] | None) -> None:
    """Move one attempt from the row ``old`` to the row ``new`` (None: not counted before, or no longer)."""
    changes: Counter = Counter()
    sums: Counter = Counter()
    for entry, sign in ((old, -1), (new, 1)):
        if entry is not None:
            changes[entry[0]] += sign
            sums[entry[0]] += sign * entry[1]
    verdict_days_add({key: (changes[key], sums[key]) for key in changes})


def attempt_key(attempt_id: int) -> tuple[Key, int] | None:
    """The row the attempt counts in as it is stored now (None: no such attempt)."""
    row = (
        Attempt.objects.filter(pk=attempt_id)
        .values_list("end", "cluster_id", "verdict_outcome", "verdict_domain", "verdict_subdomain", "needs_review",
                     "received", "current_diagnosis__created")
        .first()
    )  # fmt: skip
    if row is None:
        return None
    end, cluster_id, outcome, domain, subdomain, needs_review, received, diagnosed = row
    return key_of(end=end, cluster_id=cluster_id, outcome=outcome, domain=domain, subdomain=subdomain,
                  needs_review=needs_review, received=received, diagnosed=diagnosed)  # fmt: skip


def attempt_count(attempt_id: int) -> None:
    """Count a new attempt (or one an admin edited) in its row."""
    verdict_days_move(None, attempt_key(attempt_id))


def attempt_uncount(attempt_id: int) -> None:
    """Take the attempt out of its row (before it is deleted or edited); its row locked first."""
    list(Attempt.objects.select_for_update().filter(pk=attempt_id).values_list("pk"))
    verdict_days_move(attempt_key(attempt_id), None)


def attempt_deleted(sender, instance: Attempt, **kwargs) -> None:
    """``pre_delete`` of an attempt (the deletion's transaction): take it out of the rollup."""
    attempt_uncount(instance.pk)


def verdict_days_counted(attempts=None) -> dict[Key, tuple[int, int]]:
    """The rollup computed from scratch: (attempts, microseconds) of every row (``attempts``: the model class to read,
    a migration's historical one; default ``Attempt``)."""
    attempts = Attempt if attempts is None else attempts
    latency = ExpressionWrapper(F("current_diagnosis__created") - F("received"), output_field=DurationField())
    buckets = [
        When(latency__lte=timedelta(seconds=seconds), then=Value(i))
        for i, seconds in enumerate(VerdictDay.LATENCY_BUCKETS)
    ]
    bucket = Case(
        When(current_diagnosis=None, then=Value(VerdictDay.NOT_ANALYSED)),
        *buckets,
        default=Value(len(VerdictDay.LATENCY_BUCKETS)),
    )
    rows = (
        attempts.objects.annotate(day=TruncDate("end", tzinfo=UTC), latency=latency, bucket=bucket)
        .values_list("day", "cluster_id", "verdict_outcome", "verdict_domain", "verdict_subdomain", "needs_review",
                     "bucket")
        .annotate(count=Count("pk"), micros=Sum("latency"))
        .order_by()
    )  # fmt: skip
    return {tuple(row[:7]): (row[7], (row[8] or timedelta(0)) // MICROSECOND) for row in rows}


def verdict_days_stored() -> dict[Key, tuple[int, int]]:
    """The rollup as stored, without the rows that count no attempt."""
    rows = VerdictDay.objects.exclude(attempts=0, latency_us=0).values_list(*KEY_COLUMNS, "attempts", "latency_us")
    return {tuple(row[:7]): (row[7], row[8]) for row in rows}


def verdict_days_rebuild(attempts=None, rollup=None) -> int:
    """Build the rollup again from the attempts (writers to the attempts wait meanwhile, on PostgreSQL); the number of
    rows. ``attempts`` and ``rollup``: a migration's historical models (default ``Attempt`` and ``VerdictDay``)."""
    rollup = VerdictDay if rollup is None else rollup
    with transaction.atomic():
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute(f"LOCK TABLE {Attempt._meta.db_table} IN SHARE MODE")
        counted = verdict_days_counted(attempts)
        rollup.objects.all().delete()
        rollup.objects.bulk_create(
            [rollup(**dict(zip(KEY_COLUMNS, key, strict=True)), attempts=n, latency_us=micros)
             for key, (n, micros) in counted.items()],
            batch_size=5000,
        )  # fmt: skip
    return len(counted)


def diagnosis_created(diagnosis_id: int | None) -> datetime | None:
    if diagnosis_id is None:
        return None
    return Diagnosis.objects.filter(pk=diagnosis_id).values_list("created", flat=True).first()
