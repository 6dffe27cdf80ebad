"""The Prometheus metrics at ``/metrics`` (docs/handoffs.md lists them), collected from the database at each scrape.

The store is the one source of truth, so every web process answers the same numbers and nothing is lost on a
restart. Every label set is bounded: clusters, outcomes and the taxonomy's domains are few; per-node series exist
only for repeat offenders, at most ``FAULTLINE_METRICS_MAX_NODES`` of them (the most root causes first).
"""

from __future__ import annotations

from django.conf import settings
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily

from diagnoses.models import VerdictDay
from handoffs import selectors

LATENCY_BUCKETS = VerdictDay.LATENCY_BUCKETS  # the daily rollup counts attempts by these bounds


class FaultlineCollector:
    def collect(self):
        rows = selectors.attempt_metrics()
        attempts = CounterMetricFamily(
            "faultline_failed_attempts",
            "Failed attempts stored, by cluster and the outcome, domain and subdomain of their verdict of record "
            f"(outcome {selectors.NOT_DIAGNOSED!r}: not diagnosed yet)",
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

        latency = HistogramMetricFamily(
            "faultline_analysis_latency_seconds",
            "Seconds from an attempt's arrival (found or uploaded) to its current diagnosis",
        )
        cumulative = [sum(row["le"][i] for row in rows) for i in range(len(LATENCY_BUCKETS))]
        analysed = sum(row["analysed"] for row in rows)
        latency.add_metric(
            [],
            [(_bound(b), n) for b, n in zip(LATENCY_BUCKETS, cumulative, strict=True)] + [("+Inf", analysed)],
            sum(row["seconds"] for row in rows),
        )
        yield latency

        failures = GaugeMetricFamily(
            "faultline_pipeline_failures",
            "Pipeline failures now: attempts whose analysis failed (stage analysis) and failed discovery polls in a "
            "row (stage discovery), by cluster",
            labels=["cluster", "stage"],
        )
        analysis_failed = selectors.analysis_failures_by_cluster()
        for cluster in selectors.clusters_with_discovery():
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

        deliveries = CounterMetricFamily(
            "faultline_notification_deliveries",
            "Tries at sending a notification, by channel and result",
            labels=["channel", "result"],
        )
        for row in selectors.deliveries_by_result():
            deliveries.add_metric([row["channel"], "ok" if row["ok"] else "failed"], row["count"])
        yield deliveries


def _bound(value: float) -> str:
    return f"{value:g}" if value < 1e6 else repr(value)


def exposition() -> bytes:
    """The metrics in Prometheus' text format, collected now."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(FaultlineCollector())
    return generate_latest(registry)
