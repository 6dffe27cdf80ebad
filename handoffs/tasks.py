"""The hand-offs' Celery tasks, thin: they take primary keys and call the services."""

from celery import shared_task
from django.conf import settings

from handoffs import selectors
from handoffs.services import drains, notifications

BACKOFF_MAX_SECONDS = 600


@shared_task
def diagnosis_handoffs(diagnosis_id: int) -> None:
    """A new diagnosis, still its attempt's current one: its notifications, and automatic drain proposals for the
    repeat offenders it made."""
    diagnosis = selectors.diagnosis_current(diagnosis_id)
    if diagnosis is None:
        return
    offenders = selectors.diagnosis_repeat_offenders(diagnosis)
    notifications.diagnosis_notify(diagnosis=diagnosis, offenders=offenders)
    for node, count in offenders:
        drains.drain_propose_repeat_offender(node=node, count=count)


@shared_task
def send_due_notifications() -> list[int]:
    """Celery beat's tick: check the triage backlog, queue the messages whose grouping window ended."""
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
