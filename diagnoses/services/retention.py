"""Bundle retention: the raw logs of attempts that ended more than ``FAULTLINE_RETENTION_DAYS`` days ago are
removed from the bundle store; their rows, diagnoses, evidence (with its text) and node events stay. An
attempt being analysed, or not gathered yet, keeps its bundle."""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from django.conf import settings
from django.utils import timezone

from diagnoses import bundle_store
from diagnoses.models import Attempt

logger = logging.getLogger(__name__)
BUSY = (Attempt.Analysis.QUEUED, Attempt.Analysis.ANALYSING)


def bundles_prune(*, before: datetime | None = None, dry_run: bool = False) -> list[int]:
    """Remove the bundles of the attempts that ended before ``before`` (default: the retention period ago;
    nothing when ``FAULTLINE_RETENTION_DAYS`` is 0). Returns the attempts whose bundle was (or would be)
    removed."""
    if before is None:
        if settings.FAULTLINE_RETENTION_DAYS <= 0:
            return []
        before = timezone.now() - timedelta(days=settings.FAULTLINE_RETENTION_DAYS)
    old = Attempt.objects.filter(end__lt=before).exclude(analysis_state__in=BUSY).order_by("pk")
    pruned = []
    for pk, relative in old.values_list("pk", "bundle").iterator(chunk_size=1000):
        if not bundle_store.exists(relative):
            continue
        if not dry_run:
            bundle_store.remove(relative)
        pruned.append(pk)
    if pruned and not dry_run:
        logger.info("removed the bundles of %d attempts that ended before %s", len(pruned), before.isoformat())
    return pruned
