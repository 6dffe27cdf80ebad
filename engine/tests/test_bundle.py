"""Writing a context as a bundle: read back, it is the same context."""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime

import pytest

from engine.bundle import SOURCES_FILE, load_bundle, write_bundle
from engine.context import Attempt, AttemptContext, LogStream, MetricSeries, SchedulerEvent, SourceReport
from engine.tests.bundles import Unseekable

START = datetime(2026, 11, 2, 10, 0, tzinfo=UTC)
ATTEMPT = Attempt(
    cluster="dgx",
    scheduler="kueue",
    job_id="ml/train",
    attempt=2,
    nodes=("node01", "node02"),
    start=START,
    end=datetime(2026, 11, 2, 11, 0, tzinfo=UTC),
    state="Failed",
    exit_code="137",
    ranks={0: "node01", 1: "node02"},
    image="nvcr.io/nvidia/pytorch:25.01-py3",
    environment={"NCCL_IB_HCA": "mlx5_0", "NCCL_DEBUG": "INFO"},
)


def read(stream: LogStream) -> bytes:
    with stream.opener() as source:
        return source.read()


def test_a_context_written_and_read_back_keeps_everything(tmp_path):
    context = AttemptContext(
        attempt=ATTEMPT,
        streams=(
            LogStream.from_bytes("logs/node01/syslog.log", "syslog", "node01", b"Nov  2 10:01:00 node01 a"),
            LogStream.from_bytes("logs/node01/syslog.log", "syslog", "node01", b"Nov  2 10:02:00 node01 b\n"),
            LogStream.from_bytes("logs/stdout.out", "stdout", None, b"[rank0]: step 1\n"),
            LogStream.from_bytes("loki:{host=node02}", "kern", "node02", b"Nov  2 10:03:00 node02 kernel: c\n"),
            LogStream.from_bytes("logs/node02/../../x.log", "../escape", "node02", b"d\n"),
        ),
        events=(
            SchedulerEvent(START, "node01", "kubelet", "OOMKilling", "killed", "events/kubernetes.json:1"),
            SchedulerEvent(None, None, "kueue", "Evicted", "preempted", "events/kubernetes.json:2"),
            SchedulerEvent(START, None, "slurmctld", "NodeDown", "lost", "slurmctld:7"),
        ),
        metrics=(
            MetricSeries(
                "DCGM_FI_DEV_XID_ERRORS",
                {"__name__": "DCGM_FI_DEV_XID_ERRORS", "Hostname": "dcgm-exporter-x7f", "node": "node02", "gpu": "3"},
                ((START.timestamp(), 0.0), (START.timestamp() + 15.5, 79.0)),
                "node02",  # placed by a configured node_label "node": the exporter pod's Hostname must not win
                "metrics/xid.json#0",
            ),
            MetricSeries("up", {"__name__": "up", "instance": "node01:9100"}, ((1.0, 1.0),), "node01", "q#0"),
        ),
        reports=(
            SourceReport("xid", "metrics", "ok", "prom: 1 series"),
            SourceReport("syslog", "system", "error", "loki: HTTP 503 (after 4 tries)"),
        ),
    )

    write_bundle(context, tmp_path / "b")
    back = load_bundle(tmp_path / "b", strict=True)

    assert back.attempt == ATTEMPT
    assert {(s.ref, s.name, s.node): read(s) for s in back.streams} == {
        ("logs/node01/syslog.log", "syslog", "node01"): b"Nov  2 10:01:00 node01 a\nNov  2 10:02:00 node01 b\n",
        ("logs/stdout.out", "stdout", None): b"[rank0]: step 1\n",
        ("logs/node02/kern.log", "kern", "node02"): b"Nov  2 10:03:00 node02 kernel: c\n",
        ("logs/node02/_._escape.log", "_._escape", "node02"): b"d\n",
    }
    assert [(e.ref, e.time, e.node, e.source, e.reason, e.message) for e in back.events] == [
        ("events/kubernetes.json:1", START, "node01", "kubelet", "OOMKilling", "killed"),
        ("events/kubernetes.json:2", None, None, "kueue", "Evicted", "preempted"),
        ("events/slurmctld.json:1", START, None, "slurmctld", "NodeDown", "lost"),
    ]
    xid, up = sorted(back.metrics, key=lambda m: m.name)
    assert (xid.node, xid.samples, xid.ref) == ("node02", context.metrics[0].samples, "metrics/xid.json#0")
    assert xid.labels["exported_Hostname"] == "dcgm-exporter-x7f"
    assert (up.node, up.ref, up.labels) == ("node01", "metrics/up.json#0", context.metrics[1].labels)
    assert back.reports == context.reports
    assert not (tmp_path / "x.log").exists()


def test_a_bundle_without_reports_has_no_sources_file_and_the_destination_must_be_new(tmp_path):
    write_bundle(AttemptContext(attempt=ATTEMPT), tmp_path / "b")
    assert sorted(p.name for p in (tmp_path / "b").iterdir()) == ["attempt.json"]
    with pytest.raises(FileExistsError):
        write_bundle(AttemptContext(attempt=ATTEMPT), tmp_path / "b")


def test_an_unusable_sources_file_is_reported_not_fatal(tmp_path):
    write_bundle(AttemptContext(attempt=ATTEMPT), tmp_path / "b")
    (tmp_path / "b" / SOURCES_FILE).write_text(json.dumps([{"name": "xid", "kind": "metrics", "status": "fine"}]))
    context = load_bundle(tmp_path / "b")
    assert context.reports == (
        SourceReport(
            SOURCES_FILE,
            "sources",
            "unreadable",
            "sources.json: entry 0: field 'status' must be one of ok, partial, missing, unreadable, error",
        ),
    )


def test_tasks_per_node_gives_a_rank_map_computed_when_asked_never_expanded(tmp_path):
    from engine.context import TaskRanks
    from engine.tests.bundles import write_bundle as write_test_bundle

    path = write_test_bundle(tmp_path / "b", nodes=["n1", "n2", "n3", "n4"], tasks_per_node=250_000)
    ranks = load_bundle(path).attempt.ranks
    assert isinstance(ranks, TaskRanks)
    assert (len(ranks), ranks[0], ranks[249_999], ranks[250_000], ranks[999_999]) == (1_000_000, "n1", "n1", "n2", "n4")
    assert 1_000_000 not in ranks
    assert ranks.get(-1) is None
    write_bundle(load_bundle(path), tmp_path / "again")
    written = json.loads((tmp_path / "again" / "attempt.json").read_text())
    assert (written["tasks_per_node"], "ranks" in written) == (250_000, False)


@pytest.mark.parametrize(
    ("record", "message"),
    [
        ({"tasks_per_node": 100_000_000}, "field 'tasks_per_node': more than the 1,000 ranks allowed"),
        ({"ranks": {str(r): "n1" for r in range(1001)}, "tasks_per_node": None}, "field 'ranks': more than the 1,000"),
        ({"nodes": [f"n{i}" for i in range(101)]}, "field 'nodes': 101 nodes, more than the 100 allowed"),
        ({"cluster": "[" * 40 + "]" * 40}, None),
    ],
)
def test_the_attempt_record_past_a_limit_is_refused_naming_the_field(tmp_path, record, message):
    from engine.bundle import BundleError
    from engine.limits import Limits
    from engine.tests.bundles import write_bundle as write_test_bundle

    path = write_test_bundle(tmp_path, nodes=["n1", "n2", "n3", "n4"])
    document = {**json.loads((path / "attempt.json").read_text()), **record}
    text = json.dumps(document)
    if message is None:  # nested past the depth limit
        text = text.replace('"' + "[" * 40 + "]" * 40 + '"', "[" * 40 + "]" * 40)
        message = "nested deeper than 32 levels"
    (path / "attempt.json").write_text(text)
    with pytest.raises(BundleError, match=message.replace("(", r"\(").replace(")", r"\)")):
        load_bundle(path, limits=Limits(ranks=1000, nodes=100))


def test_events_and_series_past_the_limits_are_left_out_and_reported(tmp_path):
    from engine.limits import Limits
    from engine.tests.bundles import query_range
    from engine.tests.bundles import write_bundle as write_test_bundle

    events = [
        {"time": "2026-11-02T10:00:00Z", "node": "n1", "reason": "BackOff", "message": f"m{i}"} for i in range(30)
    ]
    series = {
        "dcgm.json": query_range(
            "DCGM_FI_DEV_XID_ERRORS", [({"Hostname": "n1", "gpu": str(i)}, [(1.0, 0.0)]) for i in range(5)]
        )
    }
    path = write_test_bundle(tmp_path, nodes=["n1"], events={"k8s.json": events}, metrics=series)
    (path / "events" / "deep.json").write_text("[" * 10_000 + "]" * 10_000)
    (path / "metrics" / "big.json").write_text(json.dumps({"pad": "x" * 50_000}))
    context = load_bundle(path, limits=Limits(events=25, series=3, json_bytes=32_768))
    assert (len(context.events), len(context.metrics)) == (25, 3)
    reports = {r.name: (r.status, r.detail) for r in context.reports}
    assert reports["events (limit)"] == ("partial", "30 events; the first 25 read, the rest left out (the limit)")
    assert reports["metrics (limit)"] == ("partial", "5 series; the first 3 read, the rest left out (the limit)")
    assert reports["deep"][0] == reports["big"][0] == "unreadable"
    assert "nested deeper than 32 levels" in reports["deep"][1]
    assert "larger than 32,768 bytes" in reports["big"][1]


@pytest.mark.parametrize("seekable", [True, False])
def test_a_gathered_stream_past_its_limit_keeps_its_ends_and_the_cut_is_reported(tmp_path, seekable):
    lines = b"".join(b"line %04d\n" % i for i in range(1000))  # 10,000 bytes
    opener = (lambda: io.BytesIO(lines)) if seekable else (lambda: io.BufferedReader(Unseekable(lines)))
    streams = (
        LogStream("logs/node01/syslog.log", "syslog", "node01", opener),
        LogStream("logs/node02/syslog.log", "syslog", "node02", lambda: io.BytesIO(lines)),
    )
    context = AttemptContext(attempt=ATTEMPT, streams=streams)

    write_bundle(context, tmp_path / "b", stream_bytes=2000, total_bytes=3000)

    first = (tmp_path / "b" / "logs" / "node01" / "syslog.log").read_bytes()
    second = (tmp_path / "b" / "logs" / "node02" / "syslog.log").read_bytes()
    if seekable:
        assert first.startswith(lines[:1000])
        assert first.endswith(lines[-1000:])
        assert b"[faultline: 8000 bytes left out here]" in first
    else:
        assert first == lines[:2000]
    assert second.startswith(lines[:500])
    assert second.endswith(lines[-500:])
    reports = {r.detail for r in load_bundle(tmp_path / "b").reports}
    assert reports == {
        "logs/node01/syslog.log: 8,000 bytes left out (the per-stream limit, 2,000 bytes)",
        "logs/node02/syslog.log: 9,000 bytes left out (the per-attempt limit, 1,000 bytes)",
    }


def test_the_image_and_environment_of_the_record_are_accepted_and_checked(tmp_path):
    from engine.bundle import BundleError, parse_attempt
    from engine.bundle.writer import attempt_document
    from engine.tests.bundles import attempt_record

    record = attempt_record(image="nvcr.io/nvidia/pytorch:25.01-py3", environment={"NCCL_IB_HCA": "mlx5_0"})
    parsed = parse_attempt(record, strict=True)
    assert (parsed.job_id, parsed.image, parsed.environment) == (
        "48213", "nvcr.io/nvidia/pytorch:25.01-py3", {"NCCL_IB_HCA": "mlx5_0"}
    )  # fmt: skip
    assert attempt_document(parsed)["image"] == "nvcr.io/nvidia/pytorch:25.01-py3"  # a gathered bundle keeps them
    assert attempt_document(parsed)["environment"] == {"NCCL_IB_HCA": "mlx5_0"}
    assert "image" not in attempt_document(parse_attempt(attempt_record(), strict=True))  # nor adds them
    with pytest.raises(BundleError, match="field 'image' must be a string"):
        parse_attempt({**record, "image": ["a"]}, strict=True)
    with pytest.raises(BundleError, match="field 'environment' must be an object of strings"):
        parse_attempt({**record, "environment": {"NCCL_IB_HCA": 1}}, strict=True)
