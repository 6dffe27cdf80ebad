"""The Blueprint's Celery tasks: thin wrappers that take primary keys and call the services.

Gather, analyse and record run in one task: the context streams the bundle from disk and is not
something to pass through the broker. Late acknowledgement, prefetch 1 and the time limits are set
in settings; a worker lost mid-task leaves the attempt ``analysing``, which the reaper re-queues. An analysis that
meets an outage (the database, the object store, a full disk) is retried by its task within a minute of its end.
"""

from datetime import datetime

from celery import shared_task
from django.conf import settings

from connectors.base import ConnectorError
from diagnoses import bundle_store
from diagnoses.outages import AnalysisInterrupted, outage_of
from diagnoses.services import analysis, discovery, retention

BACKOFF_SECONDS = 10
STAGING_MAX_AGE = 6 * 3600  # far longer than any upload or gathering takes
BACKOFF_MAX_SECONDS = 600
OUTAGE_BACKOFF_SECONDS = 5  # an analysis that met an outage is tried again after 5, 10, 20, 40, then every 60 s
OUTAGE_BACKOFF_MAX_SECONDS = 60


@shared_task(bind=True, max_retries=None)
def analyse_attempt(self, attempt_id: int, resume: str | None = None) -> None:
    """``resume``: when the try before met an outage after claiming the attempt, the time of that claim."""
    final = self.request.retries >= settings.FAULTLINE_GATHER_RETRIES
    claimed = datetime.fromisoformat(resume) if resume else None
    try:
        analysis.attempt_analyse(attempt_id=attempt_id, final=final, from_queue=True, resume=claimed)
    except ConnectorError as exc:  # transient: retry with exponential backoff
        countdown = min(BACKOFF_MAX_SECONDS, BACKOFF_SECONDS * 2**self.request.retries)
        raise self.retry(exc=exc, countdown=countdown) from exc
    except Exception as exc:  # an outage (database, object store, full disk): retry soon, resuming the claim
        if outage_of(exc) is None or self.request.is_eager:  # in-process (no broker): the reaper tries it again
            raise
        if isinstance(exc, AnalysisInterrupted):
            resume = exc.claimed.isoformat()
        countdown = min(OUTAGE_BACKOFF_MAX_SECONDS, OUTAGE_BACKOFF_SECONDS * 2**self.request.retries)
        raise self.retry(exc=exc, countdown=countdown, kwargs={"attempt_id": attempt_id, "resume": resume}) from exc


@shared_task
def reap_stuck_attempts() -> list[int]:
    return analysis.attempts_reap_stuck()


@shared_task
def prune_bundles() -> int:
    """Celery beat's daily retention: remove old attempts' bundles (FAULTLINE_RETENTION_DAYS; 0 keeps all)
    and what killed uploads left in the staging folder (older than STAGING_MAX_AGE)."""
    bundle_store.staging_sweep(older_than=STAGING_MAX_AGE)
    return len(retention.bundles_prune())


@shared_task
def poll_clusters() -> list[int]:
    """Celery beat's tick: queue a poll of each enabled cluster that is due."""
    return discovery.clusters_poll_due()


@shared_task
def poll_cluster(cluster_id: int) -> int | None:
    return discovery.cluster_poll(cluster_id=cluster_id)
