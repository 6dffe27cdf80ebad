"""What the hand-offs do when the store announces something (``diagnoses.signals``): queue the work, never do it
in the analysis's process, and never let a failure here reach the analysis."""

import logging

logger = logging.getLogger(__name__)


def diagnosis_recorded(sender, *, diagnosis_id: int, **kwargs) -> None:
    from handoffs.tasks import diagnosis_handoffs

    try:
        diagnosis_handoffs.delay(diagnosis_id)
    except Exception:  # a broker that is down loses a notification, never an analysis
        logger.exception("could not queue the hand-offs of diagnosis %s", diagnosis_id)
