"""The hand-offs' Celery tasks, thin: they take primary keys and call the services."""

from celery import shared_task
from django.conf import settings

from handoffs.services import drains, notifications

BACKOFF_SECONDS = 10
BACKOFF_MAX_SECONDS = 600


@shared_task
def diagnosis_handoffs(diagnosis_id: int) -> None:
    """A new diagnosis: its notifications, and automatic drain proposals for the repeat offenders it made."""
    from diagnoses.models import Diagnosis
    from handoffs.selectors import node_root_cause_count

    notifications.diagnosis_notify(diagnosis_id=diagnosis_id)
    diagnosis = Diagnosis.objects.filter(pk=diagnosis_id).prefetch_related("root_cause_nodes__cluster").first()
    if diagnosis is None:
        return
    for node in diagnosis.root_cause_nodes.all():
        count = node_root_cause_count(node)
        if count >= settings.FAULTLINE_REPEAT_OFFENDER_COUNT:
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
        raise self.retry(countdown=min(BACKOFF_MAX_SECONDS, BACKOFF_SECONDS * 2**self.request.retries))


@shared_task
def run_drain(drain_id: int) -> None:
    drains.drain_run(drain_id=drain_id)
