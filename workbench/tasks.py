"""The rule workbench's Celery tasks: thin wrappers that take a run's primary key (or nothing) and call the services."""

from celery import shared_task

from workbench.services import batches


@shared_task
def execute_batch(run_id: int) -> None:
    batches.batch_execute(run_id=run_id)


@shared_task
def reap_lost_batches() -> list[int]:
    return batches.batches_reap_lost()
