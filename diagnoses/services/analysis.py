"""Analysing an attempt: gather it (once), run the active rule set's engine over its stored bundle, and
record the diagnosis with its evidence and node events. Idempotent: one diagnosis per attempt and
rule-set revision (a unique constraint). The reaper re-queues analyses whose worker was lost."""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from connectors.base import ConnectorError
from diagnoses import selectors
from diagnoses.models import Attempt, Diagnosis, Evidence, FlightRecorderSummary, NodeEvent
from diagnoses.services.attempts import attempt_enqueue, nodes_ensure
from diagnoses.services.gathering import attempt_gather
from engine import Analysis, to_json
from engine.bundle import BundleError
from rules.engine_limits import bundle_limits
from rules.models import RuleSetRevision
from rules.selectors import revision_engine
from rules.services import active_revision

logger = logging.getLogger(__name__)
State = Attempt.Analysis


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
        attempt_gather(attempt=attempt)
        context = selectors.attempt_context(attempt)
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
        logger.exception("gathering the context of attempt %s failed", attempt.pk)
        attempt_fail(attempt=attempt, reason=f"gathering the context failed: {type(exc).__name__}: {exc}")
        return None
    try:
        analysis = revision_engine(revision).analyse(context, limits=bundle_limits())
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
    """Store the diagnosis, its evidence, node events and Flight Recorder summary in one transaction (or return the
    one stored)."""
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
            if root.get("nodes"):  # a new diagnosis has none: add, unlike set, inserts without reading first
                diagnosis.root_cause_nodes.add(*(nodes[name] for name in root["nodes"]))
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
            if analysis.dumps is not None:
                FlightRecorderSummary.objects.create(diagnosis=diagnosis, summary=analysis.dumps.summary())
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
            attempt_enqueue(attempt_id=attempt.pk)
            requeued.append(attempt.pk)
    if requeued:
        logger.warning("re-queued %d attempts stuck in analysis: %s", len(requeued), requeued)
    return requeued
