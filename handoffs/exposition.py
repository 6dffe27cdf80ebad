"""The Prometheus metrics at ``/metrics`` (docs/handoffs.md lists them), collected from the database at each scrape.

Two kinds, kept apart as Prometheus expects them:

- **counters** of what happened, counted once when it happened (``diagnoses.EventCount``, kept by
  ``diagnoses/services/event_counts.py`` in the event's transaction): they only ever go up, whatever is deleted,
  withdrawn or re-analysed, so ``rate()`` and ``increase()`` never see a false reset. A counter's known label sets
  are exposed at 0 before their first event (the clusters' attempts, analyses, reviews and drain commands, the
  channels' deliveries, the latency's buckets), so that ``increase()`` counts that event too
  (https://prometheus.io/docs/practices/instrumentation/#avoid-missing-metrics);
- **gauges** of what the store holds now: attempts by their verdict of record, the triage backlog, repeat offenders,
  drained nodes, pipeline failures and the sources' health.

The store is the one source of truth, so every web process answers the same numbers and nothing is lost on a
restart. Every label set is bounded: clusters, outcomes and the taxonomy's domains are few; per-node series exist
only for repeat offenders, at most ``FAULTLINE_METRICS_MAX_NODES`` of them (the most root causes first).
"""

from __future__ import annotations

from collections import defaultdict

from django.conf import settings
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily

from diagnoses.models import Review
from diagnoses.services import event_counts as events
from engine.taxonomy import DOMAINS, OUTCOMES
from handoffs import selectors
from handoffs.models import NotificationRule

# name of the count -> (the counter's name without _total, its help, its labels)
COUNTERS = {
    events.ATTEMPTS_RECEIVED: (
        "faultline_attempts_received",
        "Failed attempts stored, when they were stored: found by discovery or uploaded",
        ("cluster", "via"),
    ),
    events.ANALYSES: (
        "faultline_analyses",
        "Analyses run to their end: each new diagnosis by its outcome (re-analyses too), or failed",
        ("cluster", "result"),
    ),
    events.FIRST_DIAGNOSES: (
        "faultline_first_diagnoses",
        "Attempts diagnosed for the first time, by the outcome and domain of that first diagnosis",
        ("cluster", "outcome", "domain"),
    ),
    events.REVIEWS: ("faultline_reviews", "Reviews recorded, by their verdict", ("cluster", "verdict")),
    events.REVIEWS_WITHDRAWN: ("faultline_reviews_withdrawn", "Reviews withdrawn", ("cluster",)),
    events.NOTIFICATION_DELIVERIES: (
        "faultline_notification_deliveries",
        "Tries at sending a notification, by channel and result",
        ("channel", "result"),
    ),
    events.DRAIN_COMMANDS: (
        "faultline_drain_commands",
        "Drains and resumes run through a cluster's scheduler, by result (refused: the circuit breaker's)",
        ("cluster", "action", "result"),
    ),
}
LATENCY = "faultline_first_diagnosis_seconds"


def known_label_sets(clusters) -> dict[str, list[dict[str, str]]]:
    """The counters' label sets exposed at 0 before their first event."""
    names = [cluster.name for cluster in clusters]
    drainable = [cluster.name for cluster in clusters if selectors.cluster_can_drain(cluster)]
    return {
        events.ATTEMPTS_RECEIVED: [{"cluster": c, "via": via} for c in names for via in ("discovery", "upload")],
        events.ANALYSES: [{"cluster": c, "result": r} for c in names for r in (*OUTCOMES, events.FAILED)],
        events.FIRST_DIAGNOSES: [
            {"cluster": c, "outcome": o, "domain": d} for c in names for o in OUTCOMES for d in ("", *DOMAINS)
        ],
        events.REVIEWS: [{"cluster": c, "verdict": v} for c in names for v in Review.Verdict.values],
        events.REVIEWS_WITHDRAWN: [{"cluster": c} for c in names],
        events.NOTIFICATION_DELIVERIES: [
            {"channel": channel, "result": result}
            for channel in NotificationRule.Channel.values
            for result in ("ok", "failed")
        ],
        events.DRAIN_COMMANDS: [
            {"cluster": c, "action": action, "result": result}
            for c in drainable
            for action in ("drain", "resume")
            for result in ("ok", "failed", "refused")
        ],
    }


class FaultlineCollector:
    def collect(self):
        clusters = list(selectors.clusters_for_metrics())
        counted = selectors.event_counts()
        yield from self.counters(clusters, counted)
        yield self.latency(counted)
        yield from self.gauges(clusters)

    def counters(self, clusters, counted):
        values: dict[str, dict[tuple[str, ...], float]] = {name: {} for name in COUNTERS}
        for name, label_sets in known_label_sets(clusters).items():
            for labels in label_sets:
                values[name][tuple(labels[key] for key in COUNTERS[name][2])] = 0
        for name, labels, value in counted:
            if name in COUNTERS:
                values[name][tuple(labels.get(key, "") for key in COUNTERS[name][2])] = value
        for name, (metric, help_text, label_names) in COUNTERS.items():
            family = CounterMetricFamily(metric, help_text, labels=label_names)
            for labels, value in sorted(values[name].items()):
                family.add_metric(list(labels), value)
            yield family

    def latency(self, counted) -> HistogramMetricFamily:
        """The time to an attempt's first diagnosis: the counts of each bucket added up into cumulative ones."""
        buckets: dict[str, dict[str, float]] = {since: defaultdict(float) for since in events.SINCE}
        sums = dict.fromkeys(events.SINCE, 0.0)
        for name, labels, value in counted:
            if name == events.FIRST_DIAGNOSIS_SECONDS:
                buckets.setdefault(labels["since"], defaultdict(float))[labels["bucket"]] += value
            elif name == events.FIRST_DIAGNOSIS_SECONDS_SUM:
                sums[labels["since"]] = sums.get(labels["since"], 0.0) + value
        family = HistogramMetricFamily(
            LATENCY,
            "Seconds from a job's end (since=end: found by discovery) or from its arrival (since=arrival: uploaded) to "
            "the attempt's first diagnosis, observed once per attempt",
            labels=["since"],
        )
        bounds = [*events.LATENCY_BUCKETS, float("inf")]
        for since in sorted(buckets):
            counts = {float(bucket): n for bucket, n in buckets[since].items()}
            cumulative = [(_le(b), sum(n for bucket, n in counts.items() if bucket <= b)) for b in bounds]
            family.add_metric([since], cumulative, sums.get(since, 0.0))
        return family

    def gauges(self, clusters):
        rows = selectors.attempts_by_verdict()
        attempts = GaugeMetricFamily(
            "faultline_attempts_by_verdict",
            "Failed attempts stored now, by cluster and the outcome, domain and subdomain of their verdict of record "
            f"(outcome {selectors.NOT_DIAGNOSED!r}: not diagnosed yet); a review or re-analysis moves an attempt "
            "between label sets",
            labels=["cluster", "outcome", "domain", "subdomain"],
        )
        for row in rows:
            attempts.add_metric([row["cluster"], row["outcome"], row["domain"], row["subdomain"]], row["count"])
        yield attempts

        backlog = GaugeMetricFamily(
            "faultline_triage_backlog",
            "Attempts in the triage queue: ambiguous or unattributed and not reviewed, or the engine disagrees with "
            "their review",
            labels=["cluster"],
        )
        per_cluster: dict[str, int] = {}
        for row in rows:
            if row["backlog"]:
                per_cluster[row["cluster"]] = per_cluster.get(row["cluster"], 0) + row["backlog"]
        for cluster, count in sorted(per_cluster.items()):
            backlog.add_metric([cluster], count)
        yield backlog

        failures = GaugeMetricFamily(
            "faultline_pipeline_failures",
            "Pipeline failures now: attempts whose analysis failed (stage analysis) and failed discovery polls in a "
            "row (stage discovery), by cluster",
            labels=["cluster", "stage"],
        )
        analysis_failed = selectors.analysis_failures_by_cluster()
        for cluster in clusters:
            failures.add_metric([cluster.name, "analysis"], analysis_failed.get(cluster.name, 0))
            failures.add_metric([cluster.name, "discovery"], cluster.failures)
        yield failures

        up = GaugeMetricFamily(
            "faultline_source_up",
            "1 when the log or metric source's last gather succeeded, 0 while it fails (backing off)",
            labels=["cluster", "source", "role", "kind"],
        )
        source_failures = GaugeMetricFamily(
            "faultline_source_failures", "Failed gathers in a row of the source", labels=["cluster", "source"]
        )
        for source in selectors.sources_health():
            up.add_metric([source.cluster.name, source.name, source.role, source.kind], 0 if source.failures else 1)
            source_failures.add_metric([source.cluster.name, source.name], source.failures)
        yield up
        yield source_failures

        offenders = selectors.repeat_offenders()
        offenders_gauge = GaugeMetricFamily(
            "faultline_repeat_offenders",
            f"Nodes named by the verdicts of record of at least {settings.FAULTLINE_REPEAT_OFFENDER_COUNT} attempts "
            f"in {settings.FAULTLINE_REPEAT_OFFENDER_DAYS} days",
            labels=["cluster"],
        )
        per_cluster = {}
        for row in offenders:
            per_cluster[row["cluster"]] = per_cluster.get(row["cluster"], 0) + 1
        for cluster, number in sorted(per_cluster.items()):
            offenders_gauge.add_metric([cluster], number)
        yield offenders_gauge
        per_node = GaugeMetricFamily(
            "faultline_repeat_offender_root_causes",
            "Attempts a repeat-offender node was the root cause of in the window (the "
            f"{settings.FAULTLINE_METRICS_MAX_NODES} worst nodes only)",
            labels=["cluster", "node"],
        )
        for row in offenders[: settings.FAULTLINE_METRICS_MAX_NODES]:
            per_node.add_metric([row["cluster"], row["node"]], row["count"])
        yield per_node

        drained = GaugeMetricFamily(
            "faultline_drained_nodes", "Nodes drained by Faultline and not resumed yet", labels=["cluster"]
        )
        for cluster, number in sorted(selectors.drained_by_cluster().items()):
            drained.add_metric([cluster], number)
        yield drained


def _le(bound: float) -> str:
    return events.INFINITY if bound == float("inf") else events.bound_label(bound)


def exposition() -> bytes:
    """The metrics in Prometheus' text format, collected now."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(FaultlineCollector())
    return generate_latest(registry)
