"""Storing attempts: an uploaded or copied bundle with its attempt's rows (or a discovered attempt's rows
alone), their nodes, and queueing their analysis (``transaction.on_commit``: a worker never sees a row
that is not committed). Asked to (``history``), an uploaded bundle without ``history/`` gets the store's history of
its nodes and job written into it before it is stored, as a gathered one does (docs/bundles.md, "History")."""

from __future__ import annotations

import shutil
from pathlib import Path

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from diagnoses import bundle_store
from diagnoses.models import Attempt, Cluster, Job, Node
from diagnoses.selectors import record_history
from diagnoses.services import event_counts, verdict_days
from engine.bundle import HISTORY, write_history
from engine.context import Attempt as ParsedAttempt

State = Attempt.Analysis


class DuplicateAttempt(Exception):
    """An attempt with this cluster, job id and attempt number is already stored."""

    def __init__(self, attempt: Attempt):
        super().__init__(
            f"attempt {attempt.number} of job {attempt.job.job_id} on cluster {attempt.cluster.name} is already stored"
        )
        self.attempt = attempt


def attempt_ingest_archive(*, stream, analyse: bool = True, history: bool = False) -> Attempt:
    """Store the attempt of an uploaded ``.tar.gz`` bundle; raises ``BundleRejected`` or ``DuplicateAttempt``."""
    staging = bundle_store.stage()
    try:
        bundle_store.extract_archive(stream, staging)
        return _ingest_staged(bundle_store.locate(staging), analyse=analyse, history=history)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def attempt_ingest_directory(*, path: Path, analyse: bool = True, history: bool = False) -> Attempt:
    """Store the attempt of the bundle directory at ``path`` (copied; the original stays)."""
    bundle_store.read_attempt(Path(path))  # refuse a bad bundle before copying it
    staging = bundle_store.stage()
    try:
        bundle_store.copy_tree(Path(path), staging / "bundle")
        return _ingest_staged(staging / "bundle", analyse=analyse, history=history)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _ingest_staged(staged: Path, *, analyse: bool, history: bool) -> Attempt:
    record, parsed = bundle_store.read_attempt(staged)
    if history and not (staged / HISTORY).exists():  # a bundle's own history is kept as it came
        write_history(record_history(parsed, days=settings.FAULTLINE_HISTORY_DAYS), staged / HISTORY)
    location = bundle_store.new_location()
    bundle_store.place(staged, location)  # at a new place that no row names yet: invisible until the rows commit
    try:  # (an upload to an object store is not made inside the transaction, which it would hold open)
        with transaction.atomic():
            attempt = attempt_create(parsed=parsed, record=record, location=location, analyse=analyse)
            if analyse:
                attempt_enqueue(attempt_id=attempt.pk)
    except BaseException:
        bundle_store.remove(location)
        raise
    return attempt


def attempt_create(
    *, parsed: ParsedAttempt, record: dict, location: str, analyse: bool, discovery: dict | None = None
) -> Attempt:
    """The attempt's rows (its cluster and job when new, its nodes); raises ``DuplicateAttempt``."""
    cluster, _ = Cluster.objects.get_or_create(name=parsed.cluster)
    job, _ = Job.objects.get_or_create(
        cluster=cluster,
        job_id=parsed.job_id,
        defaults={"scheduler": parsed.scheduler, "name": parsed.name, "user": parsed.user},
    )
    try:
        with transaction.atomic():
            attempt = Attempt.objects.create(
                cluster=cluster,
                job=job,
                number=parsed.attempt,
                scheduler=parsed.scheduler,
                state=parsed.state,
                start=parsed.start,
                end=parsed.end,
                exit_code=parsed.exit_code,
                reason=parsed.reason,
                user=parsed.user,
                name=parsed.name,
                record=record,
                bundle=location,
                discovery=discovery,
                analysis_state=State.QUEUED if analyse else State.RECEIVED,
            )
            verdict_days.attempt_count(attempt.pk)
            event_counts.events_count(event_counts.attempt_received(attempt))
    except IntegrityError:
        existing = Attempt.objects.select_related("job", "cluster").get(job=job, number=parsed.attempt)
        raise DuplicateAttempt(existing) from None
    attempt.nodes.set(nodes_ensure(cluster=cluster, names=parsed.nodes).values())
    return attempt


def nodes_ensure(*, cluster: Cluster, names) -> dict[str, Node]:
    """The cluster's nodes of these names, created when new."""
    names = set(names)
    found = {node.name: node for node in Node.objects.filter(cluster=cluster, name__in=names)}
    missing = names - set(found)
    if missing:
        Node.objects.bulk_create([Node(cluster=cluster, name=name) for name in missing], ignore_conflicts=True)
        found = {node.name: node for node in Node.objects.filter(cluster=cluster, name__in=names)}
    return found


def attempt_enqueue(*, attempt_id: int, countdown: float = 0) -> None:
    """Queue the attempt's analysis once the transaction commits."""
    from diagnoses.tasks import analyse_attempt  # tasks call services; import here to avoid the cycle

    # robust: a broker that cannot take the message leaves the attempt queued (and logged), the rows stay
    transaction.on_commit(
        lambda: analyse_attempt.apply_async(args=[attempt_id], countdown=countdown or None), robust=True
    )


def attempt_reanalyse(*, attempt: Attempt) -> None:
    """Queue the attempt's analysis again, with the active rule set."""
    with transaction.atomic():
        Attempt.objects.filter(pk=attempt.pk).update(
            analysis_state=State.QUEUED, analysis_error="", state_changed=timezone.now()
        )
        attempt_enqueue(attempt_id=attempt.pk)
    attempt.refresh_from_db()


def attempts_reanalyse(*, attempts) -> int:
    """Queue the analysis of every attempt of the queryset ``attempts`` with the active revision."""
    ids = list(attempts.values_list("pk", flat=True))
    with transaction.atomic():
        for start in range(0, len(ids), 1000):
            Attempt.objects.filter(pk__in=ids[start : start + 1000]).update(
                analysis_state=State.QUEUED, analysis_error="", state_changed=timezone.now()
            )
        for attempt_id in ids:
            attempt_enqueue(attempt_id=attempt_id)
    return len(ids)
