"""Assemble one attempt's AttemptContext from its scheduler and the cluster's log and metric sources.

A source that fails (after its own retries) becomes a reported gap, never a crash: the diagnosis is
produced from what the other sources gathered, and its ``sources`` show what was missing and why.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import timedelta

from connectors.base import ConnectorError, DiscoveredAttempt, LogSource, MetricSource, Scheduler
from rules.engine.context import AttemptContext, SourceReport

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
    streams, metrics = list(base.streams), list(base.metrics)
    reports.extend(base.reports)
    start, end = attempt.start - margin, attempt.end + margin
    for source in log_sources:
        try:
            found, found_reports = source.fetch_logs(attempt.nodes, start, end)
        except Exception as exc:
            reports.append(failure_report(source.name, "system", exc))
            continue
        streams.extend(found)
        reports.extend(found_reports)
    for source in metric_sources:
        try:
            found, found_reports = source.fetch_metrics(attempt.nodes, start, end)
        except Exception as exc:
            reports.append(failure_report(source.name, "metrics", exc))
            continue
        metrics.extend(found)
        reports.extend(found_reports)
    return AttemptContext(
        attempt=base.attempt,
        streams=tuple(streams),
        events=base.events,
        metrics=tuple(metrics),
        reports=tuple(reports),
    )


def failure_report(name: str, kind: str, exc: Exception) -> SourceReport:
    if isinstance(exc, ConnectorError):
        retry = "permanent" if exc.permanent else "transient"
        return SourceReport(name=name, kind=kind, status="error", detail=f"{exc} ({retry})")
    logger.exception("connector %s failed unexpectedly", name)
    return SourceReport(name=name, kind=kind, status="error", detail=f"unexpected {type(exc).__name__}: {exc}")
