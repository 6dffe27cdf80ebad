"""The Prometheus metric source: one ``/api/v1/query_range`` request per query template and node batch.

Settings: the HTTP settings of ``HttpClient.from_settings`` (``url``, ``timeout``, ``retries``,
``token_env``/``token_file``, ...), and

- ``queries``: query name -> PromQL template, replacing ``DEFAULT_QUERIES`` when given;
  ``extra_queries`` adds to them. A template names the nodes with ``$nodes`` (a regex alternation of
  the node names, escaped for a PromQL string) and its node label with ``$node_label`` or
  ``$node_exporter_label``.
- ``node_label``: the label naming the node on DCGM exporter series (default ``Hostname``; often
  ``node`` or ``instance`` where a relabelling rule sets it).
- ``node_exporter_label``: the same for node_exporter series (default ``instance``, ``host:port``).
- ``step_seconds``: the resolution (default 15; raised so that no series exceeds 10,000 points).
- ``nodes_per_query``: nodes per request, so that a large job's regex stays short (default 64).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from datetime import datetime
from string import Template

from connectors.base import ConnectorError
from connectors.http_client import HttpClient
from connectors.settings_reader import Settings
from engine.bundle.query_range import NODE_LABELS, series_of_document
from engine.context import MetricSeries, SourceReport

DEFAULT_QUERIES = {
    "xid": 'DCGM_FI_DEV_XID_ERRORS{$node_label=~"$nodes"}',
    "ecc_dbe": 'DCGM_FI_DEV_ECC_DBE_VOL_TOTAL{$node_label=~"$nodes"}',
    "row_remap": 'DCGM_FI_DEV_ROW_REMAP_FAILURE{$node_label=~"$nodes"}',
    "nvlink_errors": '{__name__=~"DCGM_FI_DEV_NVLINK_(CRC_FLIT|CRC_DATA|REPLAY|RECOVERY)_ERROR_COUNT_TOTAL",'
    ' $node_label=~"$nodes"}',
    "gpu_temp": 'DCGM_FI_DEV_GPU_TEMP{$node_label=~"$nodes"}',
    "ib_link_downed": 'node_infiniband_link_downed_total{$node_exporter_label=~"($nodes)(:[0-9]+)?"}',
}
MAX_POINTS = 10_000
LABEL_NAME = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")


class PrometheusMetricSource:
    def __init__(self, name: str, settings: Mapping):
        self.name = name
        reader = Settings(name, settings)
        self.client = HttpClient.from_settings(reader, default_timeout=30.0)
        self.queries = reader.mapping("queries", DEFAULT_QUERIES)
        self.queries.update(reader.mapping("extra_queries"))
        self.node_label = reader.text("node_label", "Hostname")
        self.node_exporter_label = reader.text("node_exporter_label", "instance")
        for key, value in (("node_label", self.node_label), ("node_exporter_label", self.node_exporter_label)):
            if not LABEL_NAME.match(value):
                raise reader.error(key, f"is not a Prometheus label name: {value!r}")
        self.step = reader.number("step_seconds", 15.0, minimum=1.0)
        self.nodes_per_query = reader.integer("nodes_per_query", 64, minimum=1)
        for query, template in self.queries.items():
            try:
                Template(template).substitute(nodes="", node_label="x", node_exporter_label="x")
            except (KeyError, ValueError) as exc:
                raise reader.error("queries", f"template {query!r} has an unknown placeholder ({exc})") from None
        reader.finish()
        labels = (self.node_label, self.node_exporter_label, *NODE_LABELS)
        self.node_labels = tuple(dict.fromkeys(labels))

    def fetch_metrics(
        self, nodes: Sequence[str], start: datetime, end: datetime
    ) -> tuple[list[MetricSeries], list[SourceReport]]:
        step = max(self.step, math.ceil((end - start).total_seconds() / MAX_POINTS))
        batches = [list(nodes[i : i + self.nodes_per_query]) for i in range(0, len(nodes), self.nodes_per_query)]
        series: list[MetricSeries] = []
        reports: list[SourceReport] = []
        down: ConnectorError | None = None  # once the server is unreachable, the other queries are not tried
        for query_name, template in sorted(self.queries.items()):
            found, problems = [], []
            for batch in batches:
                if down is not None:
                    problems.append(f"not queried: {down}")
                    break
                query = self.promql(template, batch)
                params = {"query": query, "start": _stamp(start), "end": _stamp(end), "step": f"{step:g}"}
                document = None
                try:
                    document = self.client.get_json("/api/v1/query_range", params)
                    found.extend(series_of_document(document, f"metrics/{query_name}.json", self.node_labels))
                except ConnectorError as exc:
                    problems.append(str(exc))
                    if not exc.permanent:
                        down = exc
                except ValueError as exc:
                    problems.append(f"{self.name}: malformed query_range response to {query!r}: {exc}")
                if isinstance(document, dict) and document.get("warnings"):
                    problems.append(f"Prometheus warned: {'; '.join(map(str, document['warnings']))}")
            series.extend(_renumber(found, query_name))
            reports.append(self.report(query_name, found, problems, len(batches)))
        return series, reports

    def promql(self, template: str, nodes: Sequence[str]) -> str:
        alternation = "|".join(re.escape(node) for node in nodes)
        escaped = alternation.replace("\\", "\\\\").replace('"', '\\"')
        return Template(template).substitute(
            nodes=escaped, node_label=self.node_label, node_exporter_label=self.node_exporter_label
        )

    def report(self, query: str, found: list[MetricSeries], problems: list[str], batches: int) -> SourceReport:
        count = f"{len(found)} series"
        if problems:
            status = "error" if not found and len(problems) >= batches else "partial"
            return SourceReport(query, "metrics", status, f"{self.name}: {count}; " + "; ".join(problems))
        if not found:
            return SourceReport(query, "metrics", "missing", f"{self.name}: no series for the attempt's nodes")
        return SourceReport(query, "metrics", "ok", f"{self.name}: {count}")


def _stamp(moment: datetime) -> str:
    return f"{moment.timestamp():.3f}"


def _renumber(series: list[MetricSeries], query: str) -> list[MetricSeries]:
    """Refs that stay unique when one query took several node batches (``metrics/<query>.json#<n>``)."""
    return [
        MetricSeries(name=s.name, labels=s.labels, samples=s.samples, node=s.node, ref=f"metrics/{query}.json#{i}")
        for i, s in enumerate(series)
    ]
