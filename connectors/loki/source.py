"""The Loki log source: ``/loki/api/v1/query_range`` with ``direction=forward``, paged by time.

A page holds at most ``limit`` entries (Loki counts them over all the streams of the response). When a
page is full, the next request starts at the last timestamp returned (Loki's ``start`` is inclusive,
``end`` exclusive), and the entries at that boundary timestamp already received are dropped, the way
logcli pages. What could not be fetched (an error after retries, a malformed or short page, a node with
no lines, the ``max_lines`` cap) is reported, and the lines fetched before it are kept.

Settings: the HTTP settings of ``HttpClient.from_settings`` (``url``, ``tenant``, ``token_env``, ...), and

- ``queries`` (required): stream name -> LogQL template. ``$node`` makes one query per node (the node's
  name escaped for a LogQL string); ``$nodes`` makes one query for a batch of nodes (a regex
  alternation), whose streams are placed on nodes by ``node_label``.
- ``node_label``: the label naming the host on returned streams (default ``host``).
- ``stream_label``: when set, each returned Loki stream becomes the Faultline stream named by this
  label's value (through ``stream_names``, value -> name) instead of the query's name.
- ``limit``: entries per page (default 5000); ``max_lines``: lines per query and node (default 1,000,000).
- ``prefix_timestamp``: prefix each line with Loki's timestamp (RFC 3339), for lines that carry none.
- ``nodes_per_query``: nodes per ``$nodes`` query (default 64).
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from string import Template

from connectors.base import ConnectorError
from connectors.http_client import HttpClient
from connectors.settings_reader import Settings
from engine.context import LogStream, SourceReport, stream_kind


@dataclass
class _Pull:
    """The entries of one query: (node, stream) -> [(ns, labels, line)], and what went wrong."""

    entries: dict[tuple[str, str], list[tuple[int, str, str]]] = field(default_factory=lambda: defaultdict(list))
    problems: list[str] = field(default_factory=list)
    failed_nodes: set[str] = field(default_factory=set)


class LokiLogSource:
    def __init__(self, name: str, settings: Mapping):
        self.name = name
        reader = Settings(name, settings)
        self.client = HttpClient.from_settings(reader, default_timeout=30.0)
        self.queries = reader.mapping("queries", required=True)
        if not self.queries:
            raise reader.error("queries", "must name at least one stream")
        for stream, template in self.queries.items():
            if "$node" not in template:  # $node or $nodes
                raise reader.error("queries", f"template {stream!r} must use $node or $nodes")
            try:
                Template(template).substitute(node="", nodes="")
            except (KeyError, ValueError) as exc:
                raise reader.error("queries", f"template {stream!r} has an unknown placeholder ({exc})") from None
        self.node_label = reader.text("node_label", "host")
        self.stream_label = reader.text("stream_label")
        self.stream_names = reader.mapping("stream_names")
        self.limit = reader.integer("limit", 5000, minimum=1)
        self.max_lines = reader.integer("max_lines", 1_000_000, minimum=1)
        self.prefix_timestamp = reader.boolean("prefix_timestamp", False)
        self.nodes_per_query = reader.integer("nodes_per_query", 64, minimum=1)
        reader.finish()

    def fetch_logs(
        self, nodes: Sequence[str], start: datetime, end: datetime
    ) -> tuple[list[LogStream], list[SourceReport]]:
        start_ns, end_ns = _ns(start), _ns(end)
        streams, reports = [], []
        down: ConnectorError | None = None  # once Loki is unreachable, the remaining queries are not tried
        for name, template in sorted(self.queries.items()):
            pull = _Pull()
            if "$nodes" in template:
                groups = [list(nodes[i : i + self.nodes_per_query]) for i in range(0, len(nodes), self.nodes_per_query)]
            else:
                groups = [[node] for node in nodes]
            for group in groups:
                if down is not None:
                    pull.problems.append(f"{', '.join(group)}: not queried: {down}")
                    pull.failed_nodes.update(group)
                    continue
                query = self.logql(template, group)
                try:
                    self.pull(query, name, group, start_ns, end_ns, pull)
                except ConnectorError as exc:
                    pull.problems.append(f"{', '.join(group)}: {exc}")
                    pull.failed_nodes.update(group)
                    if not exc.permanent:
                        down = exc
            streams.extend(self.log_streams(pull))
            reports.append(self.report(name, nodes, pull))
        return streams, reports

    def logql(self, template: str, nodes: Sequence[str]) -> str:
        alternation = "|".join(re.escape(node) for node in nodes)
        return Template(template).substitute(node=_logql_string(nodes[0]), nodes=_logql_string(alternation))

    def pull(self, query: str, name: str, nodes: Sequence[str], start_ns: int, end_ns: int, pull: _Pull) -> None:
        """Page through one query's results into ``pull``; a failing page stops it with what came before."""
        boundary_ns, boundary_seen = None, set()
        cursor, taken = start_ns, defaultdict(int)
        while True:
            params = {"query": query, "start": str(cursor), "end": str(end_ns), "limit": str(self.limit),
                      "direction": "forward"}  # fmt: skip
            document = self.client.get_json("/loki/api/v1/query_range", params)
            try:
                page, claimed = _page(document)
            except ValueError as exc:
                raise ConnectorError(f"{self.name}: malformed query_range response to {query!r}: {exc}",
                                     permanent=True) from None  # fmt: skip
            if claimed is not None and claimed != len(page):
                pull.problems.append(f"{query!r}: a page claimed {claimed} entries but carried {len(page)}")
            if isinstance(document, dict) and document.get("warnings"):
                pull.problems.append(f"Loki warned: {'; '.join(map(str, document['warnings']))}")
            new = 0
            for stamp, labels, line, label_map in page:
                key = (labels, stamp, line)
                if stamp == boundary_ns and key in boundary_seen:
                    continue
                node = nodes[0] if len(nodes) == 1 else label_map.get(self.node_label)
                if node not in nodes:
                    node = _match_node(label_map.get(self.node_label, ""), nodes)
                    if node is None:
                        continue
                stream = name
                if self.stream_label:
                    value = label_map.get(self.stream_label)
                    stream = self.stream_names.get(value, value) if value else name
                if taken[node] >= self.max_lines:
                    if node not in pull.failed_nodes:
                        pull.problems.append(f"{node}: stopped at max_lines={self.max_lines}")
                        pull.failed_nodes.add(node)
                    continue
                taken[node] += 1
                pull.entries[(node, stream)].append((stamp, labels, line))
                new += 1
            if len(page) < self.limit:
                return
            last = max(stamp for stamp, *_ in page)
            if last == boundary_ns and new == 0:
                pull.problems.append(f"{query!r}: more than limit={self.limit} entries at one timestamp; rest skipped")
                return
            boundary_seen = {(labels, s, line) for s, labels, line, _ in page if s == last} | (
                boundary_seen if last == boundary_ns else set()
            )
            boundary_ns, cursor = last, last
            if all(taken[node] >= self.max_lines for node in nodes):
                return

    def log_streams(self, pull: _Pull) -> list[LogStream]:
        streams = []
        for (node, stream), entries in sorted(pull.entries.items()):
            entries.sort(key=lambda entry: (entry[0], entry[1]))
            lines = (f"{_rfc3339_ns(stamp)} {line}" if self.prefix_timestamp else line for stamp, _, line in entries)
            data = ("\n".join(lines) + "\n").encode("utf-8", "surrogateescape")
            streams.append(LogStream.from_bytes(f"logs/{node}/{stream}.log", stream, node, data))
        return streams

    def report(self, name: str, nodes: Sequence[str], pull: _Pull) -> SourceReport:
        kind = stream_kind(name)
        lines = sum(len(entries) for entries in pull.entries.values())
        with_lines = {node for node, _ in pull.entries}
        silent = [n for n in nodes if n not in with_lines and n not in pull.failed_nodes]
        detail = f"{self.name}: {lines:,} lines from {len(with_lines)} of {len(nodes)} nodes"
        problems = list(pull.problems)
        if silent:
            problems.append("no lines from " + ", ".join(silent[:5]) + (" ..." if len(silent) > 5 else ""))
        if not problems:
            return SourceReport(name, kind, "ok", detail)
        status = "partial" if with_lines else ("error" if pull.failed_nodes else "missing")
        return SourceReport(name, kind, status, f"{detail}; " + "; ".join(problems))


def _page(document: object) -> tuple[list[tuple[int, str, str, dict]], int | None]:
    """The entries of one response, (ns, canonical labels, line, labels), and its claimed entry count."""
    if not isinstance(document, dict) or document.get("status") != "success":
        status = document.get("status") if isinstance(document, dict) else None
        raise ValueError(f"status is {status!r}")
    data = document.get("data")
    if not isinstance(data, dict):
        raise ValueError("no data object")
    if data.get("resultType") != "streams":
        raise ValueError(f"resultType is {data.get('resultType')!r}, not 'streams' (a metric query?)")
    result = data.get("result")
    if not isinstance(result, list):
        raise ValueError("data.result must be a list")
    entries = []
    for index, item in enumerate(result):
        if not isinstance(item, dict) or not isinstance(item.get("stream"), dict):
            raise ValueError(f"data.result[{index}].stream must be an object")
        labels = {str(k): str(v) for k, v in item["stream"].items()}
        canonical = ",".join(f"{k}={v}" for k, v in sorted(labels.items()))
        values = item.get("values")
        if not isinstance(values, list):
            raise ValueError(f"data.result[{index}].values must be a list")
        for value in values:
            if not isinstance(value, list) or len(value) < 2 or not isinstance(value[1], str):
                raise ValueError(f"data.result[{index}].values: {str(value)[:80]} is not [timestamp, line]")
            try:
                stamp = int(value[0])
            except (TypeError, ValueError):
                raise ValueError(f"data.result[{index}].values: {value[0]!r} is not a nanosecond timestamp") from None
            entries.append((stamp, canonical, value[1], labels))
    summary = data.get("stats", {}).get("summary", {}) if isinstance(data.get("stats"), dict) else {}
    claimed = summary.get("totalEntriesReturned") if isinstance(summary, dict) else None
    return entries, claimed if isinstance(claimed, int) and not isinstance(claimed, bool) else None


def _match_node(value: str, nodes: Sequence[str]) -> str | None:
    """The node a label value names: exactly, or as an FQDN or ``host:port`` of it."""
    for node in nodes:
        if value == node or value.startswith((f"{node}.", f"{node}:")):
            return node
    return None


def _logql_string(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')


def _ns(moment: datetime) -> int:
    return int(moment.timestamp()) * 1_000_000_000 + moment.microsecond * 1000


def _rfc3339_ns(stamp: int) -> str:
    seconds, nanos = divmod(stamp, 1_000_000_000)
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%S") + f".{nanos:09d}Z"
