"""Gathering: the one place where an attempt's context is asked of its cluster's connectors.

An attempt found by polling (``Attempt.discovery`` set) is gathered once, by its analysis
(``attempt_gather``): the scheduler's record and output and every log and metric source of its cluster,
through ``connectors.gather``, with what each could not gather reported. That is written into the bundle
store as the attempt's bundle, the one source of truth from then on (analysis, evidence lines,
re-analysis, backtests, ``export-bundle``); nothing else reads a connector for an attempt. Gathering
writes the store's history of the attempt's nodes and job
into it (``history/``: the verdicts of record of its nodes in the window before it started, its job's previous
attempts; ``diagnoses.selectors.attempt_history``), so the rules may weigh it and the same bundle always gives the
same diagnosis. Gathering records each source's health: a source that failed is backed off (its circuit breaker:
the attempts gathered meanwhile do not ask it and report it as a gap; the clusters page shows it) and the sources
are asked at once, none past ``FAULTLINE_GATHER_DEADLINE`` seconds, so a source that never answers costs one
gathering that long.
An attempt that came as a bundle has nothing to gather.

``attempt_gather_again`` is the explicit request (a POST) to gather a discovered attempt anew when its
gathering or analysis failed.
"""

from dataclasses import replace
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from connectors.base import ConnectorError, DiscoveredAttempt
from connectors.gather import failure_report
from connectors.gather import gather as gather_sources
from diagnoses import bundle_store
from diagnoses.cluster_connectors import backoff_seconds, scheduler_of, source_of
from diagnoses.models import Attempt, Source
from diagnoses.selectors import attempt_history
from diagnoses.services.attempts import attempt_enqueue
from engine.context import SourceReport

REPORT_KIND = {Source.Role.LOGS: "system", Source.Role.METRICS: "metrics"}  # as connectors.gather reports them


class GatherRefused(Exception):
    """The attempt cannot be gathered again; the message says why."""


def attempt_gather(*, attempt: Attempt) -> None:
    """Gather a discovered attempt through its cluster's connectors into its bundle, once. Raises
    ``ConnectorError`` when the cluster's scheduler cannot be built (``permanent`` says whether a retry
    can help); a scheduler or source that fails while gathering is a gap in the bundle, not an error."""
    if attempt.discovery is None or attempt.gathered is not None:
        return
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
    context = gather_sources(
        discovered, scheduler, watched[Source.Role.LOGS], watched[Source.Role.METRICS],
        deadline=settings.FAULTLINE_GATHER_DEADLINE,
    )  # fmt: skip
    for one in [*watched[Source.Role.LOGS], *watched[Source.Role.METRICS]]:
        source_record_health(source=one.source, problem=one.problem)
    history = attempt_history(attempt, days=settings.FAULTLINE_HISTORY_DAYS)
    bundle_store.store_context(attempt.bundle, replace(context, reports=(*context.reports, *gaps), history=history))
    gathered = timezone.now()
    Attempt.objects.filter(pk=attempt.pk, gathered=None).update(gathered=gathered)
    attempt.gathered = gathered


def attempt_gather_again(*, attempt: Attempt) -> None:
    """Gather a discovered attempt anew and queue its analysis: its bundle, if one was written, is replaced.

    Only for an attempt without a diagnosis: a diagnosis, and the reviews of it, point into the lines of
    the bundle it was made from, which gathering again would change. Raises ``GatherRefused``."""
    if attempt.discovery is None:
        raise GatherRefused(f"{attempt} came as a bundle: there is nothing to gather it from")
    if attempt.diagnoses.exists():
        raise GatherRefused(f"{attempt} has a diagnosis: its evidence points into the bundle gathered before")
    old = attempt.bundle
    with transaction.atomic():
        Attempt.objects.filter(pk=attempt.pk).update(
            bundle=bundle_store.new_location(),
            gathered=None,
            analysis_state=Attempt.Analysis.QUEUED,
            analysis_error="",
            state_changed=timezone.now(),
        )
        transaction.on_commit(lambda: bundle_store.remove(old))
        attempt_enqueue(attempt_id=attempt.pk)
    attempt.refresh_from_db()


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
