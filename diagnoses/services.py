"""Writes: storing attempts and their bundles, analysing them, recording diagnoses and reviews.

Functions are named ``<entity>_<action>`` and take keyword arguments; tasks, commands and API views
call them. Analysis is enqueued with ``transaction.on_commit`` so a worker never sees a row that is
not committed.
"""

from __future__ import annotations

import logging
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from connectors.base import ConnectorError
from diagnoses import bundles
from diagnoses.gather import gather
from diagnoses.models import Attempt, Cluster, Diagnosis, Evidence, Job, Node, NodeEvent, Review
from rules.engine import Analysis, to_json
from rules.models import RuleSetRevision
from rules.selectors import revision_engine
from rules.services import active_revision

logger = logging.getLogger(__name__)
State = Attempt.Analysis


class DuplicateAttempt(Exception):
    """An attempt with this cluster, job id and attempt number is already stored."""

    def __init__(self, attempt: Attempt):
        super().__init__(
            f"attempt {attempt.number} of job {attempt.job.job_id} on cluster {attempt.cluster.name} is already stored"
        )
        self.attempt = attempt


# Ingest ------------------------------------------------------------------------------------------


def attempt_ingest_archive(*, stream, analyse: bool = True) -> Attempt:
    """Store the attempt of an uploaded ``.tar.gz`` bundle; raises ``BundleRejected`` or ``DuplicateAttempt``."""
    staging = bundles.stage()
    try:
        bundles.extract_archive(stream, staging)
        return _ingest_staged(bundles.locate(staging), analyse=analyse)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def attempt_ingest_directory(*, path: Path, analyse: bool = True) -> Attempt:
    """Store the attempt of the bundle directory at ``path`` (copied; the original stays)."""
    bundles.read_attempt(Path(path))  # refuse a bad bundle before copying it
    staging = bundles.stage()
    try:
        bundles.copy_tree(Path(path), staging / "bundle")
        return _ingest_staged(staging / "bundle", analyse=analyse)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _ingest_staged(staged: Path, *, analyse: bool) -> Attempt:
    record, parsed = bundles.read_attempt(staged)
    location = bundles.new_location()
    placed = False
    try:
        with transaction.atomic():
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
                        analysis_state=State.QUEUED if analyse else State.RECEIVED,
                    )
            except IntegrityError:
                existing = Attempt.objects.select_related("job", "cluster").get(job=job, number=parsed.attempt)
                raise DuplicateAttempt(existing) from None
            attempt.nodes.set(nodes_ensure(cluster=cluster, names=parsed.nodes).values())
            bundles.place(staged, location)
            placed = True
            if analyse:
                _enqueue_on_commit(attempt.pk)
    except BaseException:
        if placed:
            bundles.remove(location)
        raise
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


def _enqueue_on_commit(attempt_id: int) -> None:
    from diagnoses.tasks import analyse_attempt  # tasks call services; import here to avoid the cycle

    # robust: a broker that cannot take the message leaves the attempt queued (and logged), the rows stay
    transaction.on_commit(lambda: analyse_attempt.delay(attempt_id), robust=True)


# Analysis ----------------------------------------------------------------------------------------


def attempt_reanalyse(*, attempt: Attempt) -> None:
    """Queue the attempt's analysis again, with the active rule set."""
    with transaction.atomic():
        Attempt.objects.filter(pk=attempt.pk).update(
            analysis_state=State.QUEUED, analysis_error="", state_changed=timezone.now()
        )
        _enqueue_on_commit(attempt.pk)
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
            _enqueue_on_commit(attempt_id)
    return len(ids)


def attempt_analyse(*, attempt_id: int, final: bool = True) -> Diagnosis | None:
    """Gather, analyse and record one attempt with the active rule set. Idempotent: one diagnosis per
    attempt and rule-set revision.

    A transient ``ConnectorError`` is raised for the caller to retry unless this is the ``final``
    try; every other failure leaves the attempt ``failed`` with the reason, ready to be retried.
    """
    attempt = Attempt.objects.select_related("cluster", "job").filter(pk=attempt_id).first()
    if attempt is None:
        return None
    revision = active_revision()
    done = Diagnosis.objects.filter(attempt=attempt, revision=revision).first()
    if done is not None:
        _mark_analysed(attempt, done)
        return done
    now = timezone.now()
    Attempt.objects.filter(pk=attempt.pk).update(
        analysis_state=State.ANALYSING, analysis_started=now, state_changed=now, analysis_runs=F("analysis_runs") + 1
    )
    try:
        context = gather(attempt)
    except ConnectorError as exc:
        if exc.permanent or final:
            attempt_fail(attempt=attempt, reason=f"gathering the context failed: {exc}")
            return None
        _set_state(attempt, State.QUEUED, f"retrying after a transient error: {exc}")
        raise
    except Exception as exc:
        logger.exception("gathering the context of attempt %s failed", attempt.pk)
        attempt_fail(attempt=attempt, reason=f"gathering the context failed: {type(exc).__name__}: {exc}")
        return None
    try:
        analysis = revision_engine(revision).analyse(context)
    except Exception as exc:
        logger.exception("analysis of attempt %s failed", attempt.pk)
        attempt_fail(attempt=attempt, reason=f"the analysis failed: {type(exc).__name__}: {exc}")
        return None
    return diagnosis_record(attempt=attempt, revision=revision, analysis=analysis)


def attempt_fail(*, attempt: Attempt, reason: str) -> None:
    _set_state(attempt, State.FAILED, reason)


def _set_state(attempt: Attempt, state: str, error: str = "") -> None:
    Attempt.objects.filter(pk=attempt.pk).update(
        analysis_state=state, analysis_error=error, state_changed=timezone.now()
    )


def _mark_analysed(attempt: Attempt, diagnosis: Diagnosis) -> None:
    Attempt.objects.filter(pk=attempt.pk).update(
        analysis_state=State.ANALYSED, analysis_error="", current_diagnosis=diagnosis, state_changed=timezone.now()
    )


def diagnosis_record(*, attempt: Attempt, revision: RuleSetRevision, analysis: Analysis) -> Diagnosis:
    """Store the diagnosis, its evidence and node events in one transaction (or return the one stored)."""
    document = analysis.diagnosis
    root = document["root_cause"] or {}
    text_cap = revision_engine(revision).ruleset.settings.text_cap
    try:
        with transaction.atomic():
            diagnosis = Diagnosis.objects.create(
                attempt=attempt,
                revision=revision,
                outcome=document["outcome"],
                domain=document["domain"] or "",
                subdomain=document["subdomain"] or "",
                root_cause_rule=root.get("rule") or "",
                document_json=to_json(document),
            )
            names = {e.node for e in analysis.events} | {e["node"] for e in document["evidence"]}
            names.update(root.get("nodes", ()))
            nodes = nodes_ensure(cluster=attempt.cluster, names=names - {None})
            if root.get("nodes"):
                diagnosis.root_cause_nodes.set([nodes[name] for name in root["nodes"]])
            Evidence.objects.bulk_create(
                Evidence(
                    diagnosis=diagnosis,
                    position=position,
                    role=item["role"],
                    rule=item["rule"],
                    node=nodes.get(item["node"]),
                    source=item["source"],
                    time=_time(item["time"]),
                    ref=item["ref"],
                    text=item["text"],
                    count=item.get("count", 1),
                )
                for position, item in enumerate(document["evidence"])
            )
            NodeEvent.objects.bulk_create(
                NodeEvent(
                    diagnosis=diagnosis,
                    node=nodes.get(event.node),
                    time=None if event.time is None else datetime.fromtimestamp(event.time, tz=UTC),
                    source=event.source,
                    kind=event.kind,
                    rule=event.rule.id,
                    role=event.role or event.rule.role,
                    text=event.text if len(event.text) <= text_cap else event.text[:text_cap] + "…",
                    ref=event.ref,
                    count=event.count,
                )
                for event in analysis.events
            )
            _mark_analysed(attempt, diagnosis)
    except IntegrityError:
        diagnosis = Diagnosis.objects.filter(attempt=attempt, revision=revision).first()
        if diagnosis is None:
            raise
        _mark_analysed(attempt, diagnosis)  # analysed concurrently: already done
    return diagnosis


def _time(value: str | None) -> datetime | None:
    return None if value is None else datetime.fromisoformat(value)


def attempts_reap_stuck() -> list[int]:
    """Re-queue attempts whose analysis outlived the time limit (their worker was lost).

    An attempt that already used its ``FAULTLINE_MAX_ANALYSIS_RUNS`` fails instead, with the reason.
    """
    cutoff = timezone.now() - timedelta(seconds=settings.FAULTLINE_STUCK_AFTER)
    stuck = Attempt.objects.filter(analysis_state=State.ANALYSING, analysis_started__lt=cutoff)
    requeued = []
    with transaction.atomic():
        for attempt in stuck.select_for_update(skip_locked=True).only("pk", "analysis_runs"):
            if attempt.analysis_runs >= settings.FAULTLINE_MAX_ANALYSIS_RUNS:
                attempt_fail(
                    attempt=attempt,
                    reason=f"the analysis did not finish in {attempt.analysis_runs} runs (worker lost or killed)",
                )
                continue
            _set_state(attempt, State.QUEUED, "re-queued: the worker analysing it was lost")
            _enqueue_on_commit(attempt.pk)
            requeued.append(attempt.pk)
    if requeued:
        logger.warning("re-queued %d attempts stuck in analysis: %s", len(requeued), requeued)
    return requeued


# Reviews -----------------------------------------------------------------------------------------


def review_create(
    *,
    diagnosis: Diagnosis,
    reviewer,
    verdict: str,
    note: str = "",
    corrected_outcome: str = "",
    corrected_domain: str = "",
    corrected_subdomain: str = "",
    corrected_nodes: list[str] | None = None,
) -> Review:
    """Record a person's verdict; a correction carries the corrected outcome (and domain, subdomain, nodes)."""
    review = Review(
        diagnosis=diagnosis,
        reviewer=reviewer,
        verdict=verdict,
        note=note,
        corrected_outcome=corrected_outcome,
        corrected_domain=corrected_domain,
        corrected_subdomain=corrected_subdomain,
        corrected_nodes=sorted(set(corrected_nodes or ())),
    )
    review.full_clean()
    review.save()
    return review
