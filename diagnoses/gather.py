"""Gather: the attempt's context from its cluster's connector, whatever kind of connector that is.

A small registry maps ``Cluster.connector`` to a function returning the engine's ``AttemptContext``.
``uploads`` (no scheduler) reads the attempt's stored bundle. A cluster with a scheduler
(``slurm``, ``kueue``, ``bundles``, an allowed dotted path) gathers each attempt its discovery found
once, through ``connectors.gather``: the scheduler's record and output plus every log and metric
source, with what each could not gather reported. That is written into the bundle store as the
attempt's bundle, the one source of truth from then on (analysis, evidence lines, re-analysis,
``export-bundle``). The gather step records each source's health: a source that failed is backed off
and the attempts gathered meanwhile report it as a gap. Gatherers raise ``ConnectorError``
(``permanent`` says whether a retry can help).
"""

from collections.abc import Callable
from dataclasses import replace
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from connectors.base import ConnectorError, DiscoveredAttempt
from connectors.gather import failure_report
from connectors.gather import gather as gather_sources
from diagnoses import bundles
from diagnoses.cluster_connectors import allowed_kinds, backoff_seconds, scheduler_of, source_of
from diagnoses.models import Attempt, Cluster, Source
from engine.bundle import BundleError, load_bundle
from engine.context import AttemptContext, SourceReport

Gatherer = Callable[[Attempt], AttemptContext]
GATHERERS: dict[str, Gatherer] = {}
REPORT_KIND = {Source.Role.LOGS: "system", Source.Role.METRICS: "metrics"}  # as connectors.gather reports them


def gatherer(kind: str) -> Callable[[Gatherer], Gatherer]:
    """Register ``function`` as the gatherer of clusters whose connector is ``kind``."""

    def register(function: Gatherer) -> Gatherer:
        GATHERERS[kind] = function
        return function

    return register


@gatherer(Cluster.NO_SCHEDULER)
def gather_stored_bundle(attempt: Attempt) -> AttemptContext:
    """The attempt's stored bundle, read back; an unusable bundle is a permanent error."""
    try:
        return load_bundle(bundles.path_of(attempt.bundle))
    except BundleError as exc:
        raise ConnectorError(str(exc), permanent=True) from None


def gather_discovered(attempt: Attempt) -> AttemptContext:
    """A discovered attempt gathered through the cluster's connectors into its bundle (once), then read
    from there; an attempt that came as a bundle, or was gathered before, is read from its bundle."""
    if attempt.discovery is None or attempt.gathered is not None:
        return gather_stored_bundle(attempt)
    cluster = attempt.cluster
    scheduler = scheduler_of(cluster)
    discovered = DiscoveredAttempt.from_dict({**attempt.record, "extra": attempt.discovery})
    now = timezone.now()
    watched: dict[str, list[Watched]] = {Source.Role.LOGS: [], Source.Role.METRICS: []}
    gaps = []
    for source in cluster.sources.all():
        if source.retry_after is not None and source.retry_after > now:
            gaps.append(backing_off_report(source))
            continue
        try:
            watched[source.role].append(Watched(source, source_of(source)))
        except ConnectorError as exc:
            gaps.append(failure_report(source.name, REPORT_KIND[source.role], exc))
            source_record_health(source=source, problem=str(exc))
    context = gather_sources(discovered, scheduler, watched[Source.Role.LOGS], watched[Source.Role.METRICS])
    for one in [*watched[Source.Role.LOGS], *watched[Source.Role.METRICS]]:
        source_record_health(source=one.source, problem=one.problem)
    bundles.store_context(attempt.bundle, replace(context, reports=(*context.reports, *gaps)))
    Attempt.objects.filter(pk=attempt.pk, gathered=None).update(gathered=timezone.now())
    return gather_stored_bundle(attempt)


class Watched:
    """A log or metric source that keeps the problem of its fetch: what it raised, or its reports when
    every one of them is an error (the source is down, not just missing a stream)."""

    def __init__(self, source: Source, connector):
        self.source = source
        self.connector = connector
        self.name = connector.name
        self.problem: str | None = None

    def fetch_logs(self, *window):
        return self._fetch(self.connector.fetch_logs, window)

    def fetch_metrics(self, *window):
        return self._fetch(self.connector.fetch_metrics, window)

    def _fetch(self, method, window):
        try:
            found, reports = method(*window)
        except Exception as exc:
            self.problem = str(exc)
            raise
        if reports and all(report.status == "error" for report in reports):
            self.problem = "; ".join(report.detail for report in reports)
        return found, reports


def backing_off_report(source: Source) -> SourceReport:
    detail = (
        f"{source.name}: not asked: it failed {source.failures} time(s) in a row, last at "
        f"{source.last_failure:%Y-%m-%d %H:%M:%S}Z (next try after {source.retry_after:%H:%M:%S}Z): {source.last_error}"
    )
    return SourceReport(name=source.name, kind=REPORT_KIND[source.role], status="error", detail=detail)


def source_record_health(*, source: Source, problem: str | None) -> None:
    """A gather's outcome for one source: a success clears its backoff, a failure extends it."""
    now = timezone.now()
    if problem is None:
        Source.objects.filter(pk=source.pk).update(failures=0, retry_after=None, last_ok=now)
        return
    with transaction.atomic():
        failures = Source.objects.select_for_update().values_list("failures", flat=True).get(pk=source.pk) + 1
        delay = backoff_seconds(failures, settings.FAULTLINE_SOURCE_BACKOFF)
        Source.objects.filter(pk=source.pk).update(
            failures=failures,
            last_error=problem[:2000],
            last_failure=now,
            retry_after=now + timedelta(seconds=delay),
        )


def gather(attempt: Attempt) -> AttemptContext:
    kind = attempt.cluster.connector
    function = GATHERERS.get(kind) or (gather_discovered if kind in allowed_kinds("scheduler") else None)
    if function is None:
        raise ConnectorError(f"cluster {attempt.cluster.name}: unknown connector kind {kind!r}", permanent=True)
    return function(attempt)
