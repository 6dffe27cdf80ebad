"""Analysing an attempt: gather it (once), run the active rule set's engine over its stored bundle, and
record the diagnosis with its evidence and node events. Idempotent: one diagnosis per attempt and
rule-set revision (a unique constraint). The reaper re-queues analyses whose worker was lost."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from contextlib import ExitStack
from datetime import UTC, datetime, timedelta

from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.db.models import F, OuterRef, Q, Subquery
from django.utils import timezone

from connectors.base import ConnectorError
from diagnoses import selectors
from diagnoses.columns import fitted
from diagnoses.models import Attempt, Diagnosis, Evidence, FlightRecorderSummary, Node, NodeEvent
from diagnoses.outages import AnalysisInterrupted, outage_of
from diagnoses.services import event_counts
from diagnoses.services.attempts import attempt_enqueue, nodes_ensure
from diagnoses.services.gathering import attempt_gather
from diagnoses.services.leads import attempt_mine, leads_current, leads_record
from diagnoses.services.verdicts import attempt_verdict_update
from diagnoses.signals import diagnosis_recorded_send
from engine import Analysis, to_json
from engine.bundle import BundleError
from leads import Mined
from rules.engine_limits import bundle_limits
from rules.models import RuleSetRevision
from rules.selectors import revision_engine
from rules.services import active_revision

logger = logging.getLogger(__name__)
State = Attempt.Analysis


def attempt_analyse(
    *, attempt_id: int, final: bool = True, from_queue: bool = False, resume: datetime | None = None
) -> Diagnosis | None:
    """Gather, analyse and record one attempt with the active rule set. Idempotent: one diagnosis per
    attempt and rule-set revision.

    The attempt is claimed first (``analysing``), in one conditional update: ``from_queue`` (a queued
    analysis's message) claims only a ``queued`` (or ``received``) attempt, or the one its interrupted try claimed at
    ``resume``, so however many messages the broker, the reaper and retries deliver, one analysis runs; a direct call
    claims any attempt not being analysed. Returns None when the claim fails.

    A transient ``ConnectorError`` is raised for the caller to retry unless this is the ``final``
    try (or the attempt has used its ``FAULTLINE_GATHER_RETRIES``). An outage (the database, the object store, a full
    disk: ``diagnoses.outages``) met after the claim raises ``AnalysisInterrupted``, for the caller to retry with
    ``resume``; before it, the outage's own error. Every other failure leaves the attempt ``failed`` with the reason,
    ready to be retried.
    """
    revision = active_revision()
    stored = Diagnosis.objects.filter(attempt=OuterRef("pk"), revision=revision).values("pk")[:1]
    attempt = Attempt.objects.select_related("cluster", "job").annotate(done=Subquery(stored)).filter(pk=attempt_id)
    attempt = attempt.first()
    if attempt is None:
        return None
    if attempt.done is not None:
        done = Diagnosis.objects.get(pk=attempt.done)
        with transaction.atomic():
            _mark_analysed(attempt, done)
            leads_current(attempt_id=attempt.pk, diagnosis_id=done.pk)
        return done
    now = timezone.now()
    claimable = Attempt.objects.filter(pk=attempt.pk)
    if from_queue:  # received: stored without asking for an analysis; nothing returns an attempt to it
        waiting = Q(analysis_state__in=(State.QUEUED, State.RECEIVED))
        if resume is not None:
            waiting |= Q(analysis_state=State.ANALYSING, analysis_started=resume)
        claimable = claimable.filter(waiting)
    else:
        stuck = now - timedelta(seconds=settings.FAULTLINE_STUCK_AFTER)
        claimable = claimable.filter(~Q(analysis_state=State.ANALYSING) | Q(analysis_started__lt=stuck))
    try:
        claimed = claimable.update(
            analysis_state=State.ANALYSING, analysis_started=now, state_changed=now,
            analysis_runs=F("analysis_runs") + 1,
        )  # fmt: skip
        if not claimed:
            logger.info("attempt %s: not claimed (already analysing or no longer queued)", attempt.pk)
            return None
        final = final or attempt.analysis_runs + 1 > settings.FAULTLINE_GATHER_RETRIES
        return _analyse_claimed(attempt, revision, final=final)
    except Exception as exc:
        outage = outage_of(exc)
        if outage is None:
            raise
        logger.warning("attempt %s: analysis interrupted by an outage (%s); its task retries it", attempt.pk, exc)
        raise AnalysisInterrupted(outage, claimed=now) from exc


def _analyse_claimed(attempt: Attempt, revision: RuleSetRevision, *, final: bool) -> Diagnosis | None:
    with ExitStack() as held:
        try:
            attempt_gather(attempt=attempt)
            context = held.enter_context(selectors.attempt_context(attempt))
        except ConnectorError as exc:
            if exc.permanent or final:
                attempt_fail(attempt=attempt, reason=f"gathering the context failed: {exc}")
                return None
            _set_state(attempt, State.QUEUED, f"retrying after a transient error: {exc}")
            raise
        except BundleError as exc:
            attempt_fail(attempt=attempt, reason=f"gathering the context failed: {exc}")
            return None
        except Exception as exc:
            if outage_of(exc) is not None:
                raise
            logger.exception("gathering the context of attempt %s failed", attempt.pk)
            attempt_fail(attempt=attempt, reason=f"gathering the context failed: {type(exc).__name__}: {exc}")
            return None
        try:
            analysis = revision_engine(revision).analyse(context, limits=bundle_limits())
        except Exception as exc:
            if outage_of(exc) is not None:
                raise
            logger.exception("analysis of attempt %s failed", attempt.pk)
            attempt_fail(attempt=attempt, reason=f"the analysis failed: {type(exc).__name__}: {exc}")
            return None
        settled = analysis.diagnosis["outcome"] == "attributed"
        mined = attempt_mine(context=context, events=analysis.events, settled=settled)
    return diagnosis_record(attempt=attempt, revision=revision, analysis=analysis, mined=mined)


def attempt_fail(*, attempt: Attempt, reason: str) -> None:
    """The analysis failed (counted as such): the attempt waits, ``failed`` with the reason, to be tried again."""
    with transaction.atomic():
        _set_state(attempt, State.FAILED, reason)
        event_counts.events_count(event_counts.analysis_failed(attempt))


def _set_state(attempt: Attempt, state: str, error: str = "") -> None:
    Attempt.objects.filter(pk=attempt.pk).update(
        analysis_state=state, analysis_error=error, state_changed=timezone.now()
    )


def _mark_analysed(attempt: Attempt, diagnosis: Diagnosis, root_nodes: dict[str, int] | None = None) -> None:
    """Make ``diagnosis`` the attempt's current one and keep its verdict of record, in one update of the attempt's
    row; ``root_nodes``: its root-cause nodes' ids by name, when it was just recorded."""
    attempt_verdict_update(
        attempt_id=attempt.pk, diagnosis=diagnosis, root_nodes=root_nodes,
        analysis_state=State.ANALYSED, analysis_error="", state_changed=timezone.now(),
    )  # fmt: skip


def diagnosis_record(
    *, attempt: Attempt, revision: RuleSetRevision, analysis: Analysis, mined: Mined | None = None
) -> Diagnosis:
    """Store the diagnosis, its evidence, node events and Flight Recorder summary, and make it the attempt's current
    one with its verdict of record, in one transaction (or return the one stored); with the attempt's ``mined``
    templates, count them into the template store and record its leads (``services/leads.py``) in that transaction.
    A new one is announced in that transaction (``diagnoses.signals.diagnosis_recorded``) and counted
    (``event_counts``: the analysis, and for the attempt's first diagnosis the time it took)."""
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
            stored = nodes_ensure(cluster=attempt.cluster, names={fitted(n, Node, "name") for n in names - {None}})
            nodes = {name: stored[fitted(name, Node, "name")] for name in names - {None}}
            if root.get("nodes"):  # a new diagnosis has none: add, unlike set, inserts without reading first
                diagnosis.root_cause_nodes.add(*(nodes[name] for name in root["nodes"]))
            Evidence.objects.bulk_create(
                Evidence(
                    diagnosis=diagnosis,
                    position=position,
                    role=item["role"],
                    rule=item["rule"],
                    node=nodes.get(item["node"]),
                    source=fitted(item["source"], Evidence, "source"),
                    time=_time(item["time"]),
                    **(_bounds(*map(_time, item["time_bounds"])) if item.get("time_approx") else {}),
                    ref=fitted(item["ref"], Evidence, "ref"),
                    text=fitted(item["text"], Evidence, "text"),
                    count=item.get("count", 1),
                )
                for position, item in enumerate(document["evidence"])
            )
            _events_insert(
                (
                    diagnosis.pk,
                    None if event.node is None else nodes[event.node].pk,
                    _moment(event.time),
                    *((False, None, None) if event.exact else (True, _moment(event.low), _moment(event.high))),
                    fitted(event.source, NodeEvent, "source"),
                    event.kind,
                    event.rule.id,
                    event.role or event.rule.role,
                    fitted(
                        event.text if len(event.text) <= text_cap else event.text[:text_cap] + "…", NodeEvent, "text"
                    ),
                    fitted(event.ref, NodeEvent, "ref"),
                    event.count,
                )
                for event in analysis.events
            )
            if analysis.dumps is not None:
                FlightRecorderSummary.objects.create(diagnosis=diagnosis, summary=analysis.dumps.summary())
            root_nodes = {nodes[name].name: nodes[name].pk for name in root.get("nodes", ())}  # the stored names
            _mark_analysed(attempt, diagnosis, root_nodes)
            first = attempt.current_diagnosis_id is None
            if mined is not None:
                _leads_record(diagnosis, mined, first)
            diagnosis_recorded_send(diagnosis.pk, first=first)
            event_counts.events_count(*event_counts.diagnosis_recorded(attempt, diagnosis, first=first))
    except IntegrityError:
        diagnosis = Diagnosis.objects.filter(attempt=attempt, revision=revision).first()
        if diagnosis is None:
            raise
        _mark_analysed(attempt, diagnosis)  # analysed concurrently: already done
    return diagnosis


def _leads_record(diagnosis: Diagnosis, mined: Mined, first: bool) -> None:
    """The leads in a savepoint of their own: a failure there is logged, never a failed analysis."""
    try:
        with transaction.atomic():
            leads_record(diagnosis=diagnosis, mined=mined, first=first)
    except Exception:
        logger.exception("recording the leads of diagnosis %s failed", diagnosis.pk)


EVENT_COLUMNS = ("diagnosis_id", "node_id", "time", "time_approx", "time_low", "time_high", "source", "kind", "rule",
                 "role", "text", "ref", "count")  # fmt: skip


def _events_insert(rows: Iterable[tuple]) -> None:
    """Insert node events, each a row of ``EVENT_COLUMNS``, in one statement: on PostgreSQL a COPY, which takes a
    fifth of the time of building model instances for ``bulk_create`` (docs/performance.md, "Pipeline"; Django's
    query log does not see it); ``bulk_create`` elsewhere."""
    if connection.vendor != "postgresql":
        NodeEvent.objects.bulk_create(NodeEvent(**dict(zip(EVENT_COLUMNS, row, strict=True))) for row in rows)
        return
    copying = f"COPY {NodeEvent._meta.db_table} ({', '.join(EVENT_COLUMNS)}) FROM STDIN"
    with connection.cursor() as cursor, cursor.cursor.copy(copying) as copy:
        for row in rows:
            copy.write_row(row)


def _time(value: str | None) -> datetime | None:
    return None if value is None else datetime.fromisoformat(value)


def _moment(value: float | None) -> datetime | None:
    return None if value is None else datetime.fromtimestamp(value, tz=UTC)


def _bounds(low: datetime | None, high: datetime | None) -> dict:
    """The ``ApproximateTime`` fields of a time not read from its line: the interval it lies in."""
    return {"time_approx": True, "time_low": low, "time_high": high}


def attempts_reap_stuck() -> list[int]:
    """Re-queue attempts whose analysis outlived the time limit (their worker was lost), and those queued
    for longer than ``FAULTLINE_REQUEUE_AFTER`` seconds with no analysis in flight (their message was
    lost with the broker, or never published: the broker was down when they were stored). A discovered
    attempt counts from when it is due (its end plus its cluster's gather delay).

    A re-queued attempt may still have a message in the broker: the claim (``attempt_analyse``) runs one
    analysis whatever the number of messages. An attempt stuck in analysis that already used its
    ``FAULTLINE_MAX_ANALYSIS_RUNS`` fails instead, with the reason.
    """
    now = timezone.now()
    cutoff = now - timedelta(seconds=settings.FAULTLINE_STUCK_AFTER)
    stuck = Attempt.objects.filter(analysis_state=State.ANALYSING, analysis_started__lt=cutoff)
    waiting = _requeue_waiting(now - timedelta(seconds=settings.FAULTLINE_REQUEUE_AFTER))
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
            attempt_enqueue(attempt_id=attempt.pk)
            requeued.append(attempt.pk)
    if requeued:
        logger.warning("re-queued %d attempts stuck in analysis: %s", len(requeued), requeued)
    return waiting + requeued


def _requeue_waiting(cutoff: datetime) -> list[int]:
    waiting = Attempt.objects.filter(analysis_state=State.QUEUED, state_changed__lt=cutoff)
    requeued = []
    with transaction.atomic():
        for attempt in (
            waiting.select_for_update(skip_locked=True, of=("self",))
            .select_related("cluster")
            .only("pk", "end", "discovery", "cluster__gather_delay")
        ):
            if attempt.discovery is not None and attempt.end + timedelta(seconds=attempt.cluster.gather_delay) > cutoff:
                continue  # not due yet: its message waits for the gather delay
            Attempt.objects.filter(pk=attempt.pk).update(state_changed=timezone.now())
            attempt_enqueue(attempt_id=attempt.pk)
            requeued.append(attempt.pk)
    if requeued:
        logger.warning("re-queued %d attempts queued with no analysis in flight: %s", len(requeued), requeued)
    return requeued
