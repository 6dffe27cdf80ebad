"""Assemble one attempt's AttemptContext from its scheduler and the cluster's log and metric sources.

A source that fails (after its own retries) becomes a reported gap, never a crash: the diagnosis is
produced from what the other sources gathered, and its ``sources`` show what was missing and why. The log and
metric sources are asked at once, each in a thread of its own, while the scheduler is asked; with a ``deadline``
no HTTP call of any of them waits past it (``connectors.deadlines``), so one that never answers costs the gathering
that long at most, and the others their own time. What they gathered is put together in their given order.
"""

from __future__ import annotations

import contextvars
import logging
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

from connectors.base import ConnectorError, DiscoveredAttempt, LogSource, MetricSource, Scheduler
from connectors.deadlines import deadline as deadline_of
from engine.context import AttemptContext, SourceReport

logger = logging.getLogger(__name__)

# Logs and metrics are fetched this far around the attempt's window (the engine's default scope margin).
MARGIN = timedelta(minutes=5)


def gather(
    discovered: DiscoveredAttempt,
    scheduler: Scheduler,
    log_sources: Sequence[LogSource] = (),
    metric_sources: Sequence[MetricSource] = (),
    *,
    margin: timedelta = MARGIN,
    deadline: float | None = None,
) -> AttemptContext:
    """``deadline``: seconds the sources' HTTP calls may take in all, from now (None: their own limits only)."""
    attempt = discovered.attempt
    window = (attempt.nodes, attempt.start - margin, attempt.end + margin)
    asked = [(source, "fetch_logs", "system") for source in log_sources]
    asked += [(source, "fetch_metrics", "metrics") for source in metric_sources]
    with deadline_of(deadline), ThreadPoolExecutor(max_workers=max(1, len(asked))) as pool:
        futures = [
            pool.submit(contextvars.copy_context().run, _fetch, source, method, kind, window)
            for source, method, kind in asked
        ]
        reports: list[SourceReport] = []
        try:
            base = scheduler.attempt_context(discovered)
        except Exception as exc:  # a failing source is a gap in the diagnosis, not a crash
            base = AttemptContext(attempt=attempt)
            reports.append(failure_report(scheduler.name, "scheduler", exc))
        reports.extend(base.reports)
        fetched = {"system": [], "metrics": []}
        for (_source, _method, kind), future in zip(asked, futures, strict=True):
            found, found_reports = future.result()
            fetched[kind].extend(found)
            reports.extend(found_reports)
    streams = [*base.streams, *fetched["system"]]
    metrics = [*base.metrics, *fetched["metrics"]]
    return AttemptContext(
        attempt=base.attempt,
        streams=tuple(streams),
        events=base.events,
        metrics=tuple(metrics),
        reports=tuple(reports),
        flight_recorder=base.flight_recorder,
    )


def _fetch(source, method: str, kind: str, window: tuple) -> tuple[list, list[SourceReport]]:
    """What the source fetched for the window, and its reports; a source that raises is an ``error`` report."""
    try:
        found, found_reports = getattr(source, method)(*window)
    except Exception as exc:  # a failing source is a gap in the diagnosis, not a crash
        return [], [failure_report(source.name, kind, exc)]
    return list(found), list(found_reports)


def failure_report(name: str, kind: str, exc: Exception) -> SourceReport:
    if isinstance(exc, ConnectorError):
        retry = "permanent" if exc.permanent else "transient"
        return SourceReport(name=name, kind=kind, status="error", detail=f"{exc} ({retry})")
    logger.exception("connector %s failed unexpectedly", name)
    return SourceReport(name=name, kind=kind, status="error", detail=f"unexpected {type(exc).__name__}: {exc}")
