"""What the store tells the layers above it without knowing them (the hand-offs listen).

``diagnosis_recorded`` is sent once per new diagnosis, with ``diagnosis_id`` and ``first`` (the attempt's first
diagnosis, not a re-analysis with another rule-set revision), inside the transaction that records it: what a receiver
writes commits with the diagnosis or not at all (the hand-offs' outbox note), and what it does outside the database
it defers to the commit (``transaction.on_commit``). It is sent robustly (``send_robust``): a receiver that fails is
logged, never a failed analysis; a receiver that writes does so in its own savepoint, so that its failure leaves the
recording's transaction usable.
"""

import logging

from django.dispatch import Signal

logger = logging.getLogger(__name__)

diagnosis_recorded = Signal()


def diagnosis_recorded_send(diagnosis_id: int, *, first: bool) -> None:
    for receiver, result in diagnosis_recorded.send_robust(sender="diagnoses", diagnosis_id=diagnosis_id, first=first):
        if isinstance(result, Exception):
            logger.error("a receiver of diagnosis_recorded (%s) failed: %r", receiver, result)
