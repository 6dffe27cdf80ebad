"""Discovery: polling each enabled cluster's scheduler at its interval, storing every failed attempt it
finds once (cluster, job id, attempt number) and queueing its analysis, which gathers it; a poll that
fails is recorded and backs the cluster off."""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from connectors.base import DiscoveredAttempt
from connectors.gather import failure_report
from diagnoses import bundle_store
from diagnoses.cluster_connectors import backoff_seconds, scheduler_of
from diagnoses.columns import DoesNotFit, attempt_check
from diagnoses.models import Attempt, Cluster
from diagnoses.services.attempts import DuplicateAttempt, attempt_create, attempt_enqueue
from engine.bundle import attempt_document

SKIPPED_KEPT = 100  # records listed of those a poll could not use


def clusters_poll_due() -> list[int]:
    """Queue a poll of every enabled cluster that is due (Celery beat calls this every tick).

    A cluster is queued once per due time: its next poll moves on by its interval here, and the poll
    sets it again when it ends (later, after a failure)."""
    now = timezone.now()
    due = Cluster.objects.filter(enabled=True).exclude(connector=Cluster.NO_SCHEDULER)
    due = due.filter(Q(next_poll=None) | Q(next_poll__lte=now)).only("pk", "next_poll", "poll_interval")
    queued = []
    for cluster in due:
        moved = Cluster.objects.filter(pk=cluster.pk, next_poll=cluster.next_poll).update(
            next_poll=now + timedelta(seconds=cluster.poll_interval)
        )
        if moved:
            queued.append(cluster.pk)
    for cluster_id in queued:
        _poll_on_commit(cluster_id)
    return queued


def cluster_poll_now(*, cluster: Cluster) -> None:
    """Queue a poll of the cluster now, whatever its schedule or backoff."""
    _poll_on_commit(cluster.pk)


def _poll_on_commit(cluster_id: int) -> None:
    from diagnoses.tasks import poll_cluster  # tasks call services; import here to avoid the cycle

    transaction.on_commit(lambda: poll_cluster.delay(cluster_id), robust=True)


def cluster_poll(*, cluster_id: int) -> int | None:
    """Poll one cluster's scheduler: store each attempt it found once (the unique cluster, job id and
    attempt number), queue their analysis, and advance the cursor, all in one transaction. A failure is
    recorded and backs the cluster off. Returns the number of new attempts; None when the cluster is
    gone, has no scheduler, or another poll of it is running."""
    now = timezone.now()
    free = Q(polling_since=None) | Q(polling_since__lt=now - timedelta(seconds=settings.FAULTLINE_STUCK_AFTER))
    if (
        not Cluster.objects.filter(free, pk=cluster_id)
        .exclude(connector=Cluster.NO_SCHEDULER)
        .update(polling_since=now)
    ):
        return None
    cluster = Cluster.objects.get(pk=cluster_id)
    try:
        scheduler = scheduler_of(cluster)
        found, cursor = scheduler.discover(cluster.cursor or None)
    except Exception as exc:  # a scheduler that fails is recorded and backed off, never a crash
        failures = cluster.failures + 1
        ended = timezone.now()
        Cluster.objects.filter(pk=cluster.pk).update(
            polling_since=None,
            last_poll=ended,
            last_error=failure_report(cluster.name, "scheduler", exc).detail,
            failures=failures,
            next_poll=ended + timedelta(seconds=backoff_seconds(failures, cluster.poll_interval)),
        )
        return None
    skipped = list(scheduler.skipped)
    with transaction.atomic():
        new = _attempts_store_discovered(cluster=cluster, found=found, skipped=skipped)
        ended = timezone.now()
        if len(skipped) > SKIPPED_KEPT:
            skipped[SKIPPED_KEPT:] = [f"and {len(skipped) - SKIPPED_KEPT} more"]
        Cluster.objects.filter(pk=cluster.pk).update(
            cursor=cursor or "",
            polling_since=None,
            last_poll=ended,
            last_success=ended,
            last_error="",
            failures=0,
            last_found=new,
            skipped=skipped,
            next_poll=ended + timedelta(seconds=cluster.poll_interval),
        )
    return new


def _attempts_store_discovered(*, cluster: Cluster, found: list[DiscoveredAttempt], skipped: list[str]) -> int:
    """Store the attempts not stored yet and queue their analysis (``gather_delay`` after they ended)."""
    stored = set(
        Attempt.objects.filter(cluster=cluster, job__job_id__in={d.attempt.job_id for d in found}).values_list(
            "job__job_id", "number"
        )
    )
    new = 0
    for discovered in found:
        parsed = discovered.attempt
        if (parsed.job_id, parsed.attempt) in stored:
            continue
        if parsed.cluster != cluster.name:
            skipped.append(f"job {parsed.job_id}: the scheduler named cluster {parsed.cluster!r}; not stored")
            continue
        record = attempt_document(parsed)
        try:
            attempt_check(parsed, record, where=f"job {parsed.job_id[:100]}")
        except DoesNotFit as exc:
            skipped.append(f"{exc}; not stored")
            continue
        try:
            attempt = attempt_create(
                parsed=parsed,
                record=record,
                location=bundle_store.new_location(),
                analyse=True,
                discovery=dict(discovered.extra),
            )
        except DuplicateAttempt:  # stored meanwhile (an upload from the epilog hook)
            continue
        stored.add((parsed.job_id, parsed.attempt))
        ready = parsed.end + timedelta(seconds=cluster.gather_delay)
        attempt_enqueue(attempt_id=attempt.pk, countdown=max(0.0, (ready - timezone.now()).total_seconds()))
        new += 1
    return new
