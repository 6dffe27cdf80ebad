"""Outages: failures that pass (the database is down or restarting, the object store cannot be reached, the bundle
store's disk is full), told apart from the failures of a bundle or a rule. The API answers an outage with a JSON
503 or 507 and ``Retry-After`` (``triage.outage_responses``); an analysis that meets one is retried by its task with
backoff (``diagnoses.tasks.analyse_attempt``), never failed. Nothing is written for a request that met one."""

from __future__ import annotations

import errno
from dataclasses import dataclass

from django.db import InterfaceError, OperationalError

from diagnoses.object_store import StoreFull, StoreUnavailable

FULL_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT})


@dataclass(frozen=True)
class Outage:
    code: str  # the API error's code
    status: int  # 503, or 507 for a full store
    message: str
    retry_after: int  # seconds


def outage_of(exc: BaseException) -> Outage | None:
    """The outage ``exc`` is a sign of, or None when it is not one."""
    if isinstance(exc, AnalysisInterrupted):
        return exc.outage
    if isinstance(exc, OperationalError | InterfaceError):
        return Outage("database_unavailable", 503, "the database is unavailable; nothing was stored: try again", 10)
    if isinstance(exc, StoreFull) or (isinstance(exc, OSError) and exc.errno in FULL_ERRNOS):
        return Outage("storage_full", 507, "the bundle store is full; nothing was stored: try again later", 300)
    if isinstance(exc, StoreUnavailable):
        return Outage("storage_unavailable", 503, f"{exc}; nothing was stored: try again", 30)
    return None


class AnalysisInterrupted(Exception):
    """An analysis met an outage after claiming its attempt at ``claimed`` (its ``analysis_started``): the task's
    retry resumes that claim, since the attempt could not be put back in the queue."""

    def __init__(self, outage: Outage, claimed):
        super().__init__(outage.message)
        self.outage = outage
        self.claimed = claimed
