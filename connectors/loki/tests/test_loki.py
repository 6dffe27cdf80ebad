"""The Loki log source against a local double of Loki's query_range API (``loki_double``, started by the
root conftest's ``loki_double`` fixture)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from connectors.base import ConnectorError, DiscoveredAttempt
from connectors.gather import gather
from connectors.loki.source import LokiLogSource
from connectors.tests.record_only import RecordOnly
from engine.context import Attempt

START = datetime(2026, 11, 2, 10, 0, tzinfo=UTC)
END = datetime(2026, 11, 2, 11, 0, tzinfo=UTC)
BASE = int(START.timestamp()) * 1_000_000_000


def ns(seconds: float) -> int:
    return BASE + int(seconds * 1_000_000_000)


def syslog(node: str, count: int, *, same_stamp_at: int | None = None) -> list[tuple[int, str]]:
    """``count`` syslog lines one second apart; three lines share one timestamp at ``same_stamp_at``."""
    entries = []
    for i in range(count):
        stamp = ns(60 + (same_stamp_at if same_stamp_at is not None and same_stamp_at <= i < same_stamp_at + 3 else i))
        entries.append((stamp, f"Nov  2 10:01:{i:02d} {node} kernel: line {i}"))
    return entries


@pytest.fixture
def loki(loki_double):
    return loki_double(
        [
            ({"host": "node01", "job": "syslog"}, syslog("node01", 12, same_stamp_at=4)),
            ({"host": "node02", "job": "syslog"}, syslog("node02", 3)),
            (
                {"host": "node02", "job": "kernel"},
                [
                    (
                        ns(90),
                        "Nov  2 10:01:30 node02 kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, "
                        "GPU has fallen off the bus.",
                    )
                ],
            ),
            ({"host": "node09", "job": "syslog"}, syslog("node09", 2)),
        ]
    )


def lines(stream) -> list[str]:
    with stream.opener() as handle:
        return handle.read().decode().splitlines()


def source(loki, **settings) -> LokiLogSource:
    base = {"url": loki.url, "queries": {"syslog": '{host="$node", job="syslog"}'}, "backoff": 0}
    return LokiLogSource("loki", {**base, **settings})


def test_pages_forward_and_drops_the_repeated_entries_at_each_boundary(loki):
    streams, reports = source(loki, limit=5).fetch_logs(["node01"], START, END)
    assert [s.ref for s in streams] == ["logs/node01/syslog.log"]
    assert lines(streams[0]) == [f"Nov  2 10:01:{i:02d} node01 kernel: line {i}" for i in range(12)]
    assert [(r.status, r.detail) for r in reports] == [("ok", "loki: 12 lines from 1 of 1 nodes")]
    first, *rest = loki.requests
    assert first.params == {
        "query": '{host="node01", job="syslog"}',
        "start": str(BASE),
        "end": str(int(END.timestamp()) * 10**9),
        "limit": "5",
        "direction": "forward",
    }
    assert len(rest) >= 2
    assert all(int(b.params["start"]) >= int(a.params["start"]) for a, b in zip(loki.requests, rest, strict=False))


def test_a_query_for_all_nodes_places_streams_by_label_and_names_them_by_label(loki):
    settings = {"queries": {"syslog": '{host=~"$nodes"}'}, "stream_label": "job", "stream_names": {"kernel": "kern"}}
    streams, reports = source(loki, **settings).fetch_logs(["node01", "node02"], START, END)
    assert sorted((s.node, s.name, s.kind) for s in streams) == [
        ("node01", "syslog", "system"),
        ("node02", "kern", "system"),
        ("node02", "syslog", "system"),
    ]
    assert loki.requests[0].params["query"] == '{host=~"node01|node02"}'
    assert reports[0].status == "ok"


def test_429_and_5xx_are_retried(loki):
    loki.faults = [(429, {"Retry-After": "0"}, "too many outstanding requests"), (503, {}, "upstream unavailable")]
    streams, reports = source(loki).fetch_logs(["node02"], START, END)
    assert len(lines(streams[0])) == 3
    assert reports[0].status == "ok"
    assert len(loki.requests) == 3


def test_a_source_that_stays_down_is_an_error_and_the_other_nodes_are_not_tried(loki):
    loki.faults = [(502, {}, "bad gateway")] * 3
    streams, reports = source(loki, retries=2).fetch_logs(["node01", "node02"], START, END)
    assert streams == []
    [report] = reports
    assert report.status == "error"
    assert "HTTP 502" in report.detail
    assert "after 3 tries" in report.detail
    assert "node02: not queried" in report.detail
    assert len(loki.requests) == 3


def test_malformed_json_after_a_good_page_keeps_the_good_page_and_reports_partial(loki):
    real = loki.answer
    calls = []

    def second_page_broken(request):
        calls.append(request)
        if len(calls) >= 2:
            return 200, {}, b'{"status":"success","data":{"resultType":"streams","result":[{"stream":'
        return real(request)

    loki.respond = second_page_broken
    streams, reports = source(loki, limit=5, retries=1).fetch_logs(["node01", "node02"], START, END)
    assert [(s.node, len(lines(s))) for s in streams] == [("node01", 5)]
    [report] = reports
    assert report.status == "partial"
    assert "malformed JSON" in report.detail
    assert "after 2 tries" in report.detail


def test_a_page_that_carries_fewer_entries_than_it_claims_is_reported(loki):
    page = {
        "status": "success",
        "data": {
            "resultType": "streams",
            "stats": {"summary": {"totalEntriesReturned": 3}},
            "result": [{"stream": {"host": "node02", "job": "syslog"}, "values": [[str(ns(60)), "only one"]]}],
        },
    }
    loki.faults = [(200, {}, page)]
    streams, reports = source(loki).fetch_logs(["node02"], START, END)
    assert lines(streams[0]) == ["only one"]
    assert reports[0].status == "partial"
    assert "claimed 3 entries but carried 1" in reports[0].detail


def test_a_bad_query_is_permanent_and_a_node_without_lines_is_reported(loki):
    streams, reports = source(loki, queries={"syslog": 'host="$node"'}).fetch_logs(["node01"], START, END)
    assert streams == []
    assert reports[0].status == "error"
    assert "HTTP 400" in reports[0].detail
    assert "parse error" in reports[0].detail
    streams, reports = source(loki).fetch_logs(["node01", "node03"], START, END)
    assert reports[0].status == "partial"
    assert "no lines from node03" in reports[0].detail


def test_a_metric_query_is_a_permanent_error(loki):
    loki.faults = [(200, {}, {"status": "success", "data": {"resultType": "matrix", "result": []}})]
    _, reports = source(loki).fetch_logs(["node01"], START, END)
    assert reports[0].status == "error"
    assert "not 'streams'" in reports[0].detail


def test_prefix_timestamp_gives_lines_loki_s_time(loki):
    streams, _ = source(loki, prefix_timestamp=True).fetch_logs(["node02"], START, END)
    assert lines(streams[0])[0] == "2026-11-02T10:01:00.000000000Z Nov  2 10:01:00 node02 kernel: line 0"


def test_settings_are_checked():
    with pytest.raises(ConnectorError, match="'queries' is required") as caught:
        LokiLogSource("loki", {"url": "http://127.0.0.1:1"})
    assert caught.value.permanent
    with pytest.raises(ConnectorError, match="must use \\$node or \\$nodes"):
        LokiLogSource("loki", {"url": "http://127.0.0.1:1", "queries": {"syslog": '{job="syslog"}'}})
    with pytest.raises(ConnectorError, match="'lmit' is not a setting"):
        LokiLogSource("loki", {"url": "http://127.0.0.1:1", "queries": {"syslog": '{host="$node"}'}, "lmit": 5})


def test_the_engine_diagnoses_from_loki_logs_gathered_with_the_attempt(loki, engine):
    attempt = Attempt(
        cluster="dgx",
        scheduler="slurm",
        job_id="9",
        attempt=0,
        nodes=("node01", "node02"),
        start=START,
        end=END,
        state="FAILED",
        exit_code="1:0",
    )
    logs = source(loki, queries={"syslog": '{host=~"$nodes"}'})
    context = gather(DiscoveredAttempt(attempt=attempt), RecordOnly(), [logs])
    diagnosis = engine.diagnose(context)
    assert (diagnosis["subdomain"], diagnosis["root_cause"]["nodes"]) == ("gpu.bus", ["node02"])
    assert diagnosis["evidence"][0]["ref"].startswith("logs/node02/syslog.log:")
