"""What the hand-offs do when the store announces something (``diagnoses.signals``): note and queue the work, never do
it in the analysis's process, and never let a failure here reach the analysis."""

import logging

from django.db import transaction

from handoffs.services import outbox

logger = logging.getLogger(__name__)


def diagnosis_recorded(sender, *, diagnosis_id: int, first: bool, **kwargs) -> None:
    """A new attempt's diagnosis, in the transaction that records it: note its hand-offs there (the note commits with
    the diagnosis) and queue them once it commits. A re-analysis (a new rule-set revision, a batch over thousands of
    attempts) hands nothing off: it is not news of a failure."""
    if not first:
        return
    with transaction.atomic():  # a savepoint: a note that cannot be written leaves the recording usable
        outbox.handoff_note(diagnosis_id=diagnosis_id)
    transaction.on_commit(lambda: _queue(diagnosis_id))


def _queue(diagnosis_id: int) -> None:
    from handoffs.tasks import diagnosis_handoffs

    try:
        diagnosis_handoffs.delay(diagnosis_id)
    except Exception:  # a broker that is down delays a notification (the tick queues it again), never an analysis
        logger.exception("could not queue the hand-offs of diagnosis %s; queued again later", diagnosis_id)
