"""Background runs over stored attempts: backtests of a revision and reanalyses with the active one.

``batch_start`` stores the run and enqueues its task after the commit; the task calls
``batch_execute``, which works through the attempts matching the run's filters (newest first), at
most ``limit`` of them and for at most ``time_limit`` seconds, saving its progress after each attempt
and stopping when someone asks it to (``batch_cancel``).

A backtest stores nothing but its result: for each attempt the stored diagnosis and the one the
revision would give, the changes, and the agreement of both with the attempts' human reviews.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from datetime import timedelta

from django.conf import settings
from django.db import connections, transaction
from django.template.defaultfilters import pluralize
from django.utils import timezone

from diagnoses.filters import AttemptFilter
from diagnoses.models import Attempt
from diagnoses.selectors import attempt_context
from diagnoses.services.analysis import attempt_analyse
from diagnoses.services.verdicts import review_active
from rules.models import RuleSetRevision
from rules.selectors import revision_engine
from workbench import agreement
from workbench.models import BatchRun
from workbench.services.cases import CaseRejected, expected_from_review

logger = logging.getLogger(__name__)
FILTER_FIELDS = ("ended_after", "ended_before", "cluster", "outcome")
CHANGES_KEPT = 500  # rows of the change table stored with a result


class FilterRejected(ValueError):
    """A filter value is not valid; the message names the field."""


def attempts_matching(filters: dict):
    """The stored attempts matching ``filters`` (the attempt list's FilterSet), newest first."""
    chosen = {name: value for name, value in filters.items() if name in FILTER_FIELDS and value not in ("", None)}
    filterset = AttemptFilter(chosen, queryset=Attempt.objects.all())
    if not filterset.is_valid():
        name, problems = next(iter(filterset.errors.items()))
        raise FilterRejected(f"{name}: {' '.join(problems)}")
    return filterset.qs.order_by("-end", "-pk")


def batch_start(
    *, kind: str, revision: RuleSetRevision, filters: dict, user=None, limit: int | None = None
) -> BatchRun:
    """Store a run over the attempts matching ``filters`` and enqueue it; raises ``FilterRejected``."""
    attempts_matching(filters)  # refuse bad filters now, not in the worker
    maximum = settings.FAULTLINE_BATCH_MAX_ATTEMPTS
    limit = maximum if limit is None else max(1, min(limit, maximum))
    filters = {name: str(filters[name]) for name in FILTER_FIELDS if filters.get(name) not in ("", None)}
    with transaction.atomic():
        run = BatchRun.objects.create(
            kind=kind,
            revision=revision,
            filters=filters,
            limit=limit,
            time_limit=settings.FAULTLINE_BATCH_TIME_LIMIT,
            created_by=user,
        )
        if settings.FAULTLINE_BATCH_IN_THREAD:
            transaction.on_commit(lambda: batch_execute_in_thread(run_id=run.pk), robust=True)
        else:
            from workbench.tasks import execute_batch  # tasks call services: imported here to avoid the cycle

            transaction.on_commit(lambda: execute_batch.delay(run.pk), robust=True)
    return run


def batch_execute_in_thread(*, run_id: int) -> threading.Thread:
    """Run the batch in a thread of this process (no broker, no worker: ``make run``), so the request that started
    it answers at once and the run's page polls its progress like a worker's."""

    def execute() -> None:
        try:
            batch_execute(run_id=run_id)
        finally:
            connections.close_all()  # the thread's own connection

    thread = threading.Thread(target=execute, name=f"batch-run-{run_id}", daemon=True)
    thread.start()
    return thread


def batches_reap_lost() -> list[int]:
    """Runs whose message or worker was lost: a run queued for longer than ``FAULTLINE_REQUEUE_AFTER``
    seconds is enqueued again (its claim makes it run once); a run still ``running`` well past its time
    limit (``time_limit`` + ``FAULTLINE_STUCK_AFTER``) lost its worker and fails with the reason."""
    from workbench.tasks import execute_batch  # tasks call services: imported here to avoid the cycle

    now = timezone.now()
    requeued = []
    with transaction.atomic():
        waiting = BatchRun.objects.filter(
            state=BatchRun.State.QUEUED, created__lt=now - timedelta(seconds=settings.FAULTLINE_REQUEUE_AFTER)
        )
        for run in waiting.select_for_update(skip_locked=True).only("pk"):
            BatchRun.objects.filter(pk=run.pk).update(created=now)  # counted again from now
            transaction.on_commit(lambda pk=run.pk: execute_batch.delay(pk), robust=True)
            requeued.append(run.pk)
        running = BatchRun.objects.filter(state=BatchRun.State.RUNNING).only("pk", "started", "time_limit", "done")
        for run in running.select_for_update(skip_locked=True):
            if run.started + timedelta(seconds=run.time_limit + settings.FAULTLINE_STUCK_AFTER) > now:
                continue
            BatchRun.objects.filter(pk=run.pk, state=BatchRun.State.RUNNING).update(
                state=BatchRun.State.FAILED,
                finished=now,
                stopped_reason=(
                    f"lost: the worker running it stopped after {run.done} attempt{pluralize(run.done)}; start it again"
                ),
            )
    if requeued:
        logger.warning("re-queued %d batch runs whose message was lost: %s", len(requeued), requeued)
    return requeued


def batch_cancel(*, run: BatchRun) -> None:
    """Ask the run to stop; a run not started yet is cancelled at once."""
    BatchRun.objects.filter(pk=run.pk, state=BatchRun.State.QUEUED).update(
        state=BatchRun.State.CANCELLED, cancel_requested=True, finished=timezone.now()
    )
    BatchRun.objects.filter(pk=run.pk, state=BatchRun.State.RUNNING).update(cancel_requested=True)
    run.refresh_from_db()


def batch_execute(*, run_id: int) -> BatchRun | None:
    """Run the batch ``run_id`` if it is still queued: claimed in one conditional update, so a run whose
    message came twice (the reaper re-enqueued it) runs once; returns early otherwise (idempotent)."""
    run = BatchRun.objects.select_related("revision__ruleset").filter(pk=run_id).first()
    if run is None or run.state != BatchRun.State.QUEUED:
        return run
    ids = list(attempts_matching(run.filters).values_list("pk", flat=True)[: run.limit])
    run.state, run.started, run.total, run.done = BatchRun.State.RUNNING, timezone.now(), len(ids), 0
    claimed = BatchRun.objects.filter(pk=run.pk, state=BatchRun.State.QUEUED).update(
        state=run.state, started=run.started, total=run.total, done=0
    )
    if not claimed:
        run.refresh_from_db()
        return run
    work = _Backtest(run) if run.kind == BatchRun.Kind.BACKTEST else _Reanalysis(run)
    deadline = time.monotonic() + run.time_limit
    state, reason = BatchRun.State.DONE, ""
    try:
        for position, attempt_id in enumerate(ids):
            if BatchRun.objects.filter(pk=run.pk, cancel_requested=True).exists():
                state, reason = (
                    BatchRun.State.CANCELLED,
                    f"cancelled after {position} of {len(ids)} attempt{pluralize(len(ids))}",
                )
                break
            if time.monotonic() > deadline:
                reason = f"stopped at the time limit ({run.time_limit} s) after {position} of {len(ids)}"
                reason += f" attempt{pluralize(len(ids))}"
                break
            stop = work.step(attempt_id)
            if stop:
                reason = stop
                break
            BatchRun.objects.filter(pk=run.pk).update(done=position + 1)
    except Exception as exc:
        logger.exception("batch run %s failed", run.pk)
        state, reason = BatchRun.State.FAILED, f"{type(exc).__name__}: {exc}"
    run.refresh_from_db(fields=["done"])
    run.state, run.stopped_reason, run.finished, run.result = state, reason, timezone.now(), work.result()
    BatchRun.objects.filter(pk=run.pk, state=BatchRun.State.RUNNING).update(  # unless failed as lost meanwhile
        state=run.state, stopped_reason=run.stopped_reason, finished=run.finished, result=run.result
    )
    run.refresh_from_db()
    return run


class _Backtest:
    """The revision's diagnosis of each attempt next to the stored one, and both against the reviews."""

    def __init__(self, run: BatchRun):
        self.engine = revision_engine(run.revision)
        self.examined = 0
        self.changes: list[dict] = []
        self.errors: list[dict] = []
        self.reviewed: list[tuple[dict, dict | None, dict]] = []  # (expected, before, after)

    def step(self, attempt_id: int) -> str:
        attempt = Attempt.objects.select_related("cluster", "job", "current_diagnosis").filter(pk=attempt_id).first()
        if attempt is None:
            return ""
        label = f"{attempt.cluster.name}/{attempt.job.job_id}#{attempt.number}"
        try:
            with attempt_context(attempt) as context:
                after = self.engine.diagnose(context)
        except Exception as exc:  # one attempt's trouble is reported with it; the run goes on
            self.errors.append({"attempt": attempt.pk, "label": label, "error": f"{type(exc).__name__}: {exc}"})
            return ""
        self.examined += 1
        before = attempt.current_diagnosis.document if attempt.current_diagnosis else None
        if agreement.changed(before, after):
            self.changes.append(
                {
                    "attempt": attempt.pk,
                    "label": label,
                    "before": agreement.key(before) if before else None,
                    "after": agreement.key(after),
                }
            )
        review = review_active(attempt.pk)
        if review is not None:
            with contextlib.suppress(CaseRejected):  # "insufficient evidence" names no outcome to agree with
                self.reviewed.append((expected_from_review(review), before, after))
        return ""

    def result(self) -> dict:
        with_before = [(expected, before) for expected, before, _ in self.reviewed if before is not None]
        return {
            "examined": self.examined,
            "changed": len(self.changes),
            "changes": self.changes[:CHANGES_KEPT],
            "errors": self.errors,
            "agreement": {
                "reviewed": len(self.reviewed),
                "before": agreement.summarise(with_before),
                "after": agreement.summarise([(expected, after) for expected, _, after in self.reviewed]),
            },
        }


class _Reanalysis:
    """Each attempt analysed again with the active revision (the run's), stored as the pipeline does."""

    def __init__(self, run: BatchRun):
        self.run = run
        self.outcomes: dict[str, int] = {}
        self.failed: list[dict] = []

    def step(self, attempt_id: int) -> str:
        active = RuleSetRevision.objects.filter(ruleset_id=self.run.revision.ruleset_id, active=True).first()
        if active is None or active.pk != self.run.revision_id:
            return f"stopped: {active or 'another revision'} was activated meanwhile; start a new reanalysis"
        diagnosis = attempt_analyse(attempt_id=attempt_id, final=True)
        if diagnosis is None:
            attempt = Attempt.objects.filter(pk=attempt_id).only("analysis_error").first()
            if attempt is not None:
                self.failed.append({"attempt": attempt_id, "error": attempt.analysis_error})
        else:
            self.outcomes[diagnosis.outcome] = self.outcomes.get(diagnosis.outcome, 0) + 1
        return ""

    def result(self) -> dict:
        return {"outcomes": dict(sorted(self.outcomes.items())), "failed": self.failed}
