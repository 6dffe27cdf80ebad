"""Assemble one attempt's AttemptContext from its scheduler and the cluster's log and metric sources.

A source that fails (after its own retries) becomes a reported gap, never a crash: the diagnosis is
produced from what the other sources gathered, and its ``sources`` show what was missing and why.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import timedelta

from connectors.base import ConnectorError, DiscoveredAttempt, LogSource, MetricSource, Scheduler
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
) -> AttemptContext:
    attempt = discovered.attempt
    reports: list[SourceReport] = []
    try:
        base = scheduler.attempt_context(discovered)
    except Exception as exc:  # a failing source is a gap in the diagnosis, not a crash
        base = AttemptContext(attempt=attempt)
        reports.append(failure_report(scheduler.name, "scheduler", exc))
    reports.extend(base.reports)
    window = (attempt.nodes, attempt.start - margin, attempt.end + margin)
    streams = [*base.streams, *_collect(log_sources, "fetch_logs", "system", window, reports)]
    metrics = [*base.metrics, *_collect(metric_sources, "fetch_metrics", "metrics", window, reports)]
    return AttemptContext(
        attempt=base.attempt,
        streams=tuple(streams),
        events=base.events,
        metrics=tuple(metrics),
        reports=tuple(reports),
        flight_recorder=base.flight_recorder,
    )


def _collect(sources, method: str, kind: str, window: tuple, reports: list[SourceReport]) -> list:
    """What each source fetched for the window; a source that raises becomes an ``error`` report."""
    gathered = []
    for source in sources:
        try:
            found, found_reports = getattr(source, method)(*window)
        except Exception as exc:  # a failing source is a gap in the diagnosis, not a crash
            reports.append(failure_report(source.name, kind, exc))
            continue
        gathered.extend(found)
        reports.extend(found_reports)
    return gathered


def failure_report(name: str, kind: str, exc: Exception) -> SourceReport:
    if isinstance(exc, ConnectorError):
        retry = "permanent" if exc.permanent else "transient"
        return SourceReport(name=name, kind=kind, status="error", detail=f"{exc} ({retry})")
    logger.exception("connector %s failed unexpectedly", name)
    return SourceReport(name=name, kind=kind, status="error", detail=f"unexpected {type(exc).__name__}: {exc}")
