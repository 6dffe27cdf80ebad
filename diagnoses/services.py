"""Writes: storing attempts and their bundles, analysing them, recording diagnoses and reviews,
configuring clusters and polling them (discovery).

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
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.db.models import F, Q
from django.utils import timezone

from connectors.base import ConnectorError, DiscoveredAttempt
from connectors.gather import failure_report
from diagnoses import bundles
from diagnoses.cluster_connectors import backoff_seconds, scheduler_of
from diagnoses.gather import gather
from diagnoses.models import Attempt, Cluster, Diagnosis, Evidence, Job, Node, NodeEvent, Review, Source
from engine import Analysis, to_json
from engine.bundle import attempt_document
from engine.context import Attempt as ParsedAttempt
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
            attempt = _attempt_create(parsed=parsed, record=record, location=location, analyse=analyse)
            bundles.place(staged, location)
            placed = True
            if analyse:
                _enqueue_on_commit(attempt.pk)
    except BaseException:
        if placed:
            bundles.remove(location)
        raise
    return attempt


def _attempt_create(
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


def _enqueue_on_commit(attempt_id: int, *, countdown: float = 0) -> None:
    from diagnoses.tasks import analyse_attempt  # tasks call services; import here to avoid the cycle

    # robust: a broker that cannot take the message leaves the attempt queued (and logged), the rows stay
    transaction.on_commit(
        lambda: analyse_attempt.apply_async(args=[attempt_id], countdown=countdown or None), robust=True
    )


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


# Clusters and discovery --------------------------------------------------------------------------

SKIPPED_KEPT = 100  # records listed of those a poll could not use


def cluster_configure(*, cluster: Cluster | None = None, sources: list[dict] | None = None, **fields) -> Cluster:
    """Create or change a cluster's configuration (``Cluster.CONFIGURATION`` fields) and, when ``sources``
    is given, replace its log and metric sources (``{role, name, kind, settings}`` each; a source kept
    by name keeps its health). Every problem is raised at once as a ``ValidationError`` whose keys are
    field paths (``scheduler_settings``, ``sources.1.settings``), each naming the setting at fault."""
    cluster = cluster or Cluster()
    for name, value in fields.items():
        setattr(cluster, name, value)
    errors: dict[str, list] = {}
    try:
        cluster.full_clean(exclude=[f.name for f in Cluster._meta.fields if f.name not in Cluster.CONFIGURATION])
    except ValidationError as exc:
        errors.update(exc.error_dict)
    rows: list[Source] = []
    if sources is not None:
        kept = {source.name: source for source in cluster.sources.all()} if cluster.pk else {}
        for index, item in enumerate(sources):
            row = kept.pop(item.get("name"), None) or Source()
            row.cluster = cluster
            for name in ("role", "name", "kind", "settings"):
                setattr(row, name, item.get(name, getattr(row, name)))
            rows.append(row)
            row.position = index
            try:
                row.full_clean(exclude=["cluster"], validate_constraints=False)
            except ValidationError as exc:
                errors.update({f"sources.{index}.{field}": problems for field, problems in exc.error_dict.items()})
            if [other.name for other in rows].count(row.name) > 1:
                errors[f"sources.{index}.name"] = [ValidationError(f"a second source named {row.name!r}")]
    if errors:
        raise ValidationError(errors)
    with transaction.atomic():
        cluster_save(cluster=cluster)
        if sources is not None:
            cluster.sources.exclude(pk__in=[row.pk for row in rows if row.pk]).delete()
            for row in rows:
                source_save(source=row)
    return cluster


def cluster_save(*, cluster: Cluster) -> None:
    """Save a cluster's configuration only (a poll ending meanwhile keeps its state). A changed scheduler
    is due at once, without backoff, and from a fresh cursor when its kind changed."""
    fields = list(Cluster.CONFIGURATION)
    before = Cluster.objects.filter(pk=cluster.pk).values("connector", "scheduler_settings").first()
    if before and (before["connector"], before["scheduler_settings"]) != (
        cluster.connector,
        cluster.scheduler_settings,
    ):
        cluster.next_poll, cluster.failures = None, 0
        fields += ["next_poll", "failures"]
        if before["connector"] != cluster.connector:
            cluster.cursor = ""
            fields.append("cursor")
    cluster.save(update_fields=fields if before else None)


def source_save(*, source: Source) -> None:
    """Save a source's configuration only; a changed kind or settings ends its backoff."""
    fields = list(Source.CONFIGURATION)
    before = Source.objects.filter(pk=source.pk).values("kind", "settings").first()
    if before and (before["kind"], before["settings"]) != (source.kind, source.settings):
        source.failures, source.retry_after = 0, None
        fields += ["failures", "retry_after"]
    source.save(update_fields=fields if before else None)


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
        try:
            attempt = _attempt_create(
                parsed=parsed,
                record=attempt_document(parsed),
                location=bundles.new_location(),
                analyse=True,
                discovery=dict(discovered.extra),
            )
        except DuplicateAttempt:  # stored meanwhile (an upload from the epilog hook)
            continue
        stored.add((parsed.job_id, parsed.attempt))
        ready = parsed.end + timedelta(seconds=cluster.gather_delay)
        _enqueue_on_commit(attempt.pk, countdown=max(0.0, (ready - timezone.now()).total_seconds()))
        new += 1
    return new


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
