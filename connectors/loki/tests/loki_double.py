"""A Loki double: ``GET /loki/api/v1/query_range`` as Loki's HTTP API reference documents it.

It holds log streams (labels and ``(nanosecond timestamp, line)`` entries) and answers stream
selectors (``{label="value", label=~"regex", label!="value"}``, no pipeline) with
``{"status": "success", "data": {"resultType": "streams", "result": [{"stream": {...}, "values":
[["<ns>", "<line>"], ...]}], "stats": {"summary": {...}}}}``. ``start`` is inclusive and ``end``
exclusive (nanosecond epochs), ``limit`` (default 100) caps the entries over all streams, and
``direction`` (default backward) picks the oldest or newest ones. A bad selector is a 400 with
Loki's plain-text parse error. ``faults`` holds the responses to give instead of the next ones.
"""

from __future__ import annotations

import re

from connectors.tests.http_double import HttpDouble, Request

MATCHER = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)\s*"((?:[^"\\]|\\.)*)"\s*(?:,|$)')


class LokiDouble(HttpDouble):
    def __init__(self, streams: list[tuple[dict[str, str], list[tuple[int, str]]]]):
        self.streams = streams
        self.faults: list[tuple[int, dict, object]] = []
        super().__init__(self.answer)

    def answer(self, request: Request):
        if request.path != "/loki/api/v1/query_range":
            return 404, {"Content-Type": "text/plain"}, "404 page not found\n"
        if self.faults:
            return self.faults.pop(0)
        params = request.params
        try:
            matchers = parse_selector(params["query"])
        except (KeyError, ValueError) as exc:
            return 400, {"Content-Type": "text/plain"}, f"parse error : {exc}\n"
        start, end = int(params.get("start", 0)), int(params["end"])
        limit, direction = int(params.get("limit", 100)), params.get("direction", "backward")
        entries = []
        for index, (labels, values) in enumerate(self.streams):
            if all(matches(labels.get(name, ""), op, value) for name, op, value in matchers):
                entries.extend((stamp, index, line) for stamp, line in values if start <= stamp < end)
        entries.sort(key=lambda e: (e[0], e[1]), reverse=direction == "backward")
        entries = entries[:limit]
        result = []
        for index in sorted({e[1] for e in entries}):
            values = [[str(stamp), line] for stamp, i, line in entries if i == index]
            result.append({"stream": self.streams[index][0], "values": values})
        stats = {"summary": {"bytesProcessedPerSecond": 0, "linesProcessedPerSecond": 0, "totalBytesProcessed": 0,
                             "totalLinesProcessed": len(entries), "execTime": 0.001, "queueTime": 0.0,
                             "subqueries": 0, "totalEntriesReturned": len(entries)}}  # fmt: skip
        body = {"status": "success", "data": {"resultType": "streams", "result": result, "stats": stats}}
        return 200, {}, body


def parse_selector(query: str) -> list[tuple[str, str, str]]:
    query = query.strip()
    if not (query.startswith("{") and query.endswith("}")):
        raise ValueError(f"syntax error: unexpected {query[:1]!r}, expecting {{")
    body, matchers, position = query[1:-1], [], 0
    while position < len(body):
        match = MATCHER.match(body, position)
        if not match:
            raise ValueError(f"syntax error at col {position + 2}")
        name, op, value = match.groups()
        matchers.append((name, op, value.encode().decode("unicode_escape")))
        position = match.end()
    if not matchers:
        raise ValueError("queries require at least one regexp or equality matcher")
    return matchers


def matches(actual: str, op: str, value: str) -> bool:
    if op == "=":
        return actual == value
    if op == "!=":
        return actual != value
    found = re.fullmatch(value, actual) is not None
    return found if op == "=~" else not found
