"""The hand-offs' Celery tasks, thin: they take primary keys and call the services."""

from datetime import timedelta

from celery import shared_task
from django.conf import settings
from django.db import transaction
from django.utils import timezone

from handoffs import selectors
from handoffs.services import drains, notifications, outbox

BACKOFF_MAX_SECONDS = 600
HANDOFF_LOST_AFTER_SECONDS = 120  # a noted hand-off not run by then is queued again: its message was lost


@shared_task
def diagnosis_handoffs(diagnosis_id: int) -> None:
    """A new diagnosis, still its attempt's current one: its notifications, and automatic drain proposals for the
    repeat offenders it made. Runs once, whoever queued it (the outbox's note is taken in the same transaction)."""
    with transaction.atomic():
        if not outbox.handoff_claim(diagnosis_id=diagnosis_id):
            return
        diagnosis = selectors.diagnosis_current(diagnosis_id)
        if diagnosis is None:
            return
        offenders = selectors.diagnosis_repeat_offenders(diagnosis)
        notifications.diagnosis_notify(diagnosis=diagnosis, offenders=offenders)
        notifications.pattern_notify(diagnosis=diagnosis)
        for node, count in offenders:
            drains.drain_propose_repeat_offender(node=node, count=count, attempt=diagnosis.attempt)


@shared_task
def send_due_notifications() -> list[int]:
    """Celery beat's tick: queue again the hand-offs whose message was lost, check the triage backlog, queue the
    messages whose grouping window ended."""
    noted_before = timezone.now() - timedelta(seconds=HANDOFF_LOST_AFTER_SECONDS)
    for diagnosis_id in outbox.handoffs_requeue(noted_before=noted_before):
        diagnosis_handoffs.delay(diagnosis_id)
    notifications.backlog_notify()
    return notifications.incidents_queue_due()


@shared_task(bind=True, max_retries=None)
def deliver_incident(self, incident_id: int) -> None:
    final = self.request.retries >= settings.FAULTLINE_NOTIFICATION_RETRIES
    done = notifications.incident_deliver(incident_id=incident_id, number=self.request.retries + 1, final=final)
    if not done:
        backoff = settings.FAULTLINE_NOTIFICATION_BACKOFF * 2**self.request.retries
        raise self.retry(countdown=min(BACKOFF_MAX_SECONDS, backoff))


@shared_task
def run_drain(drain_id: int) -> None:
    drains.drain_run(drain_id=drain_id)
