"""The rule workbench's Celery task: a thin wrapper that takes a run's primary key and calls the service."""

from celery import shared_task

from workbench.services import batches


@shared_task
def execute_batch(run_id: int) -> None:
    batches.batch_execute(run_id=run_id)
