"""What the hand-offs do when the store announces something (``diagnoses.signals``): queue the work, never do it
in the analysis's process, and never let a failure here reach the analysis."""

import logging

from handoffs.services import outbox

logger = logging.getLogger(__name__)


def diagnosis_recorded(sender, *, diagnosis_id: int, first: bool, **kwargs) -> None:
    """A new attempt's diagnosis: queue its hand-offs. A re-analysis (a new rule-set revision, a batch over thousands
    of attempts) hands nothing off: it is not news of a failure."""
    from handoffs.tasks import diagnosis_handoffs

    if not first:
        return
    outbox.handoff_note(diagnosis_id=diagnosis_id)
    try:
        diagnosis_handoffs.delay(diagnosis_id)
    except Exception:  # a broker that is down delays a notification (the tick queues it again), never an analysis
        logger.exception("could not queue the hand-offs of diagnosis %s; queued again later", diagnosis_id)
