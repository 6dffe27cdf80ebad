"""The hand-offs' outbox: a new diagnosis is noted before its hand-offs are queued, and the note is taken back by the
task that runs them, so that a broker that is down when a diagnosis is recorded delays its notification instead of
losing it."""

import logging
from datetime import datetime

from django.db import transaction
from django.utils import timezone

from handoffs.models import PendingHandoff

logger = logging.getLogger(__name__)

REQUEUE_AT_MOST = 5  # then the hand-offs are given up (logged): they fail every time, not for a lost message


def handoff_note(*, diagnosis_id: int) -> None:
    """Note the diagnosis's hand-offs as due (one statement; noted already: left as it is)."""
    PendingHandoff.objects.bulk_create([PendingHandoff(diagnosis_id=diagnosis_id)], ignore_conflicts=True)


def handoff_claim(*, diagnosis_id: int) -> bool:
    """Take the note of a diagnosis's hand-offs; False when there is none (another task ran them). Call it inside the
    transaction that runs them: a failure puts the note back."""
    deleted, _ = PendingHandoff.objects.filter(diagnosis_id=diagnosis_id).delete()
    return deleted > 0


def handoffs_requeue(*, noted_before: datetime) -> list[int]:
    """The diagnoses whose hand-offs were queued before ``noted_before`` and have not run (the message was lost, or the
    task failed), noted as queued again now; those queued ``REQUEUE_AT_MOST`` times already are given up."""
    now, again = timezone.now(), []
    with transaction.atomic():
        overdue = PendingHandoff.objects.select_for_update(skip_locked=True).filter(noted__lt=noted_before)
        for pending in overdue.order_by("noted", "diagnosis_id"):
            if pending.requeued >= REQUEUE_AT_MOST:
                logger.error(
                    "gave up the hand-offs of diagnosis %s after %d tries", pending.diagnosis_id, pending.requeued
                )
                pending.delete()
                continue
            pending.noted, pending.requeued = now, pending.requeued + 1
            pending.save(update_fields=["noted", "requeued"])
            again.append(pending.diagnosis_id)
    return again
