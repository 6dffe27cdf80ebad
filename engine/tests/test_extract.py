"""Extraction: which lines become events, with which time, node and count."""

import io
from dataclasses import replace
from datetime import UTC, datetime

import pytest

from engine import parse_ruleset
from engine.attribution import attribute
from engine.bundle import load_bundle
from engine.context import LogStream
from engine.extract import Extractor
from engine.limits import Limits
from engine.prefilter import Prefilter, loosen
from engine.report import build
from engine.tests.bundles import Unseekable, query_range, write_bundle

RULES = """
rules:
  - id: xid
    description: an Xid
    streams: [system]
    pattern: 'NVRM: Xid \\(PCI:(?P<pci>[^)]+)\\): (?P<xid>\\d+),'
    role: cause
    domain: hardware
    subdomain: gpu
  - id: keyerror
    description: a KeyError
    streams: [app]
    pattern: '^KeyError: (?P<key>.*)'
    role: cause
    domain: application
    subdomain: exception
  - id: syslog-only
    description: only in streams named syslog
    streams: [system]
    files: [syslog]
    pattern: 'only-here'
    role: context
  - id: node-failure
    description: srun names the failed node
    streams: [app]
    pattern: 'Node failure on (?P<host>\\S+)'
    node_from: host
    role: cause
    domain: infrastructure
    subdomain: node_lost
  - id: down
    description: a scheduler event
    streams: [events]
    pattern: 'not responding, setting DOWN'
    role: cause
    domain: infrastructure
    subdomain: node_lost
  - id: xid-gauge
    description: the DCGM Xid gauge changed
    metric: {series: DCGM_FI_DEV_XID_ERRORS, condition: changes}
    where: {value: {not_in: [0]}}
    role: cause
    domain: hardware
    subdomain: gpu
  - id: timeout
    description: the job timed out
    attempt: {state: [TIMEOUT]}
    role: cause
    domain: scheduler
    subdomain: time_limit
"""


def extract(path):
    extractor = Extractor(parse_ruleset([("t.yaml", RULES)]))
    return extractor.extract(load_bundle(path))


def utc(*args) -> float:
    return datetime(*args, tzinfo=UTC).timestamp()


def test_a_matching_line_becomes_an_event_with_captures_node_and_ref(tmp_path):
    lines = [
        "Nov  2 09:59:00 node02 CRON[1]: noise",
        "Nov  2 10:14:07 node02 kernel: NVRM: Xid (PCI:0000:3b:00): 79, GPU",
    ]
    events, stats = extract(write_bundle(tmp_path, logs={"node02/syslog.log": lines}))
    (event,) = events
    assert event.rule.id == "xid"
    assert event.node == "node02"
    assert event.captures == {"pci": "0000:3b:00", "xid": "79"}
    assert event.ref == "logs/node02/syslog.log:2"
    assert event.time == utc(2026, 11, 2, 10, 14, 7)
    assert event.exact
    assert stats[0].lines == 2


def test_repeated_identical_lines_are_one_event_with_a_count(tmp_path):
    line = "Nov  2 10:{:02d}:00 node02 kernel: NVRM: Xid (PCI:0000:3b:00): 95, Uncontained"
    events, _ = extract(write_bundle(tmp_path, logs={"node02/syslog.log": [line.format(m) for m in range(60)]}))
    (event,) = events
    assert event.count == 60
    assert event.time == utc(2026, 11, 2, 10, 0)
    assert event.last == utc(2026, 11, 2, 10, 59)


def test_a_line_without_a_timestamp_lies_between_its_stamped_neighbours(tmp_path):
    lines = [
        "[2026-11-02 10:00:00,000] INFO step 1",
        "Traceback (most recent call last):",
        '  File "train.py", line 3, in <module>',
        "KeyError: 'labels'",
        "[2026-11-02 10:02:30,000] INFO shutting down",
    ]
    events, _ = extract(write_bundle(tmp_path, logs={"node03/train.log": lines}))
    (event,) = events
    assert not event.exact
    assert (event.time, event.low, event.high) == (
        utc(2026, 11, 2, 10),
        utc(2026, 11, 2, 10),
        utc(2026, 11, 2, 10, 2, 30),
    )


def test_a_bound_no_line_gives_stays_unknown(tmp_path):
    events, _ = extract(write_bundle(tmp_path, logs={"node03/train.log": ["KeyError: 'labels'"]}))
    (event,) = events
    assert (event.time, event.low, event.high, event.exact) == (None, None, None, False)


def test_the_later_bound_may_lie_in_a_later_block(tmp_path, monkeypatch):
    import engine.blocks as blocks_module

    monkeypatch.setattr(blocks_module, "BLOCK_BYTES", 64)
    lines = ["KeyError: 'labels'", *["  padding line of no time at all"] * 6, "2026-11-02T10:05:00Z INFO done"]
    events, _ = extract(write_bundle(tmp_path, logs={"node03/train.log": lines}))
    (event,) = events
    assert (event.time, event.low, event.high) == (utc(2026, 11, 2, 10, 5), None, utc(2026, 11, 2, 10, 5))


def test_dmesg_human_stamps_are_a_minute_then_deltas(tmp_path):
    # dmesg -H (util-linux print_record, DMESG_TIMEFTM_RELTIME): "%b%e %H:%M" when the minute changes,
    # else the delta to the previous line.
    lines = [
        "[Nov 2 10:14] pcieport 0000:00:01.0: AER: Corrected error received",
        "[  +0.500000] usb 1-1: new device",
        "[  +2.250000] NVRM: Xid (PCI:0000:3a:00): 79, GPU has fallen off the bus.",
    ]
    events, _ = extract(write_bundle(tmp_path, logs={"node01/dmesg.log": lines}))
    (event,) = events
    assert not event.exact
    assert event.low == utc(2026, 11, 2, 10, 14, 2, 750000)
    assert event.high == utc(2026, 11, 2, 10, 15)  # still inside the stamped minute


def test_epoch_seconds_in_brackets_are_wall_clock_not_uptime(tmp_path):
    line = "0: [1793614440.500000] [node01:56309:2:56362] Caught signal 11 NVRM: Xid (PCI:0000:3a:00): 79, x"
    events, _ = extract(write_bundle(tmp_path, logs={"node01/syslog.log": [line]}))
    assert events[0].time == utc(2026, 11, 2, 10, 14, 0, 500000)
    assert events[0].exact


def test_a_workload_line_is_placed_on_its_ranks_node(tmp_path):
    lines = ["[2026-11-02 10:00:00,000] start", "17: [rank17]: KeyError: 'x'"]
    events, _ = extract(write_bundle(tmp_path, logs={"slurm-1.out": lines}))
    assert [e.node for e in events] == ["node03"]  # 8 tasks per node: rank 17 runs on the third node


def test_a_rule_restricted_to_stream_names_looks_nowhere_else(tmp_path):
    logs = {
        "node01/syslog.log": ["Nov  2 10:00:00 node01 x: only-here"],
        "node01/kern.log": ["Nov  2 10:00:00 node01 x: only-here"],
    }
    events, _ = extract(write_bundle(tmp_path, logs=logs))
    assert [e.ref for e in events] == ["logs/node01/syslog.log:1"]


def test_node_from_takes_the_node_a_line_names(tmp_path):
    events, _ = extract(write_bundle(tmp_path, logs={"slurm-1.out": ["srun: error: Node failure on node04"]}))
    assert [(e.rule.id, e.node) for e in events] == [("node-failure", "node04")]


def test_dmesg_uptime_is_dated_by_the_rtc_anchor(tmp_path):
    lines = [
        "[    0.000000] Linux version 5.15.0-105-generic (buildd@lcy02) #82 SMP",
        "[    1.900000] rtc_cmos 00:02: setting system clock to 2026-11-02T00:00:00 UTC (1793577600)",
        "[36847.100000] NVRM: Xid (PCI:0000:3a:00): 48, pid=1, DBE",
    ]
    events, _ = extract(write_bundle(tmp_path, logs={"node01/dmesg.log": lines}))
    (event,) = events
    assert event.time == pytest.approx(1793577600 - 1.9 + 36847.1)


def test_scheduler_events_metrics_and_the_attempt_record(tmp_path):
    events_json = [
        {"time": "2026-11-02T10:20:00Z", "node": "node02", "source": "slurmctld", "reason": "NodeNotResponding",
         "message": "error: Nodes node02 not responding, setting DOWN"},
        {"time": "2026-11-02T10:21:00Z", "node": None, "source": "slurmctld", "reason": "JobComplete",
         "message": "done"},
    ]  # fmt: skip
    start = utc(2026, 11, 2, 9)
    gauge = query_range(
        "DCGM_FI_DEV_XID_ERRORS",
        [
            ({"Hostname": "node03", "gpu": "5"}, [(start + 60 * i, 79 if i >= 30 else 0) for i in range(60)]),
            ({"Hostname": "node01", "gpu": "0"}, [(start + 60 * i, 0) for i in range(60)]),
        ],
    )
    bundle = write_bundle(tmp_path, state="TIMEOUT", events={"slurm.json": events_json}, metrics={"xid.json": gauge})
    events, _ = extract(bundle)
    found = sorted((e.rule.id, e.node, e.time) for e in events)
    assert found == [
        ("down", "node02", utc(2026, 11, 2, 10, 20)),
        ("timeout", None, utc(2026, 11, 2, 10, 30)),
        ("xid-gauge", "node03", start + 1740),
    ]
    gauge_event = next(e for e in events if e.rule.id == "xid-gauge")
    assert gauge_event.captures["value"] == "79"
    # The gauge changed after the sample before (10:29) and by the sample that shows it (10:30).
    assert (gauge_event.exact, gauge_event.low, gauge_event.high) == (False, start + 1740, start + 1800)


def test_invalid_utf8_binary_and_huge_lines_are_read_not_fatal(tmp_path):
    huge = b"x" * (3 << 20)
    content = (
        b"\xff\xfe\x00binary\x00\n"
        + huge
        + b" NVRM: Xid (PCI:0000:01:00): 79, tail\n"
        + b"Nov  2 10:00:00 node01 k: \xc3\x28 NVRM: Xid (PCI:0000:02:00): 48, x\n"
    )
    events, stats = extract(write_bundle(tmp_path, logs={"node01/syslog.log": content}))
    by_xid = {e.captures["xid"]: e for e in events}
    assert set(by_xid) == {"48", "79"}
    assert by_xid["79"].low is None  # nothing before it carries a time; the next line bounds it
    assert by_xid["79"].time == by_xid["79"].high == by_xid["48"].time
    assert "\ufffd" in by_xid["48"].text
    assert stats[0].lines == 3


@pytest.mark.parametrize("seekable", [True, False])
def test_a_line_past_the_limit_is_cut_and_flagged_and_the_rest_of_the_stream_is_read(tmp_path, monkeypatch, seekable):
    import engine.blocks as blocks_module

    monkeypatch.setattr(blocks_module, "BLOCK_BYTES", 256)
    line = "Nov  2 10:00:00 node01 k: NVRM: Xid (PCI:0000:01:00): 48, " + "y" * 600 + " NVRM: Xid (PCI:0:2): 79, z"
    after = "Nov  2 10:00:01 node01 k: NVRM: Xid (PCI:0000:01:00): 31, after"
    context = load_bundle(write_bundle(tmp_path, logs={"node01/syslog.log": [line, "x" * 300, after]}))
    if not seekable:
        stream = context.streams[0]
        unseekable = replace(stream, opener=lambda: io.BufferedReader(Unseekable(stream.opener().read())))
        context = replace(context, streams=(unseekable,))
    extractor = Extractor(parse_ruleset([("t.yaml", RULES)]))
    events, stats = extractor.extract(context, limits=Limits(line_bytes=512))
    assert sorted((e.captures["xid"], e.ref) for e in events) == [
        ("31", "logs/node01/syslog.log:3"),  # after the cut line, numbered as if it were whole
        ("48", "logs/node01/syslog.log:1"),  # the cut line's first 512 bytes are matched; the Xid past them is lost
    ]
    assert (stats[0].lines, stats[0].cut) == (3, 1)
    source = next(s for s in build(context, extractor.ruleset, attribute(events, context.attempt, extractor.ruleset),
                                   stats, None)["sources"] if s["name"] == "syslog")  # fmt: skip
    assert source["status"] == "partial"
    assert "1 over-long line(s) cut" in source["detail"]


def test_an_unterminated_last_line_between_a_block_and_the_limit_ends_the_scan(tmp_path, monkeypatch):
    import engine.blocks as blocks_module

    monkeypatch.setattr(blocks_module, "BLOCK_BYTES", 256)
    last = "Nov  2 10:00:01 node01 k: NVRM: Xid (PCI:0000:01:00): 79, " + "A" * 400  # 1.8 blocks, no newline
    path = write_bundle(tmp_path, logs={"node01/syslog.log": ("Nov  2 10:00:00 node01 k: first\n" + last).encode()})
    events, stats = Extractor(parse_ruleset([("t.yaml", RULES)])).extract(
        load_bundle(path), limits=Limits(line_bytes=1024)
    )
    assert [e.ref for e in events] == ["logs/node01/syslog.log:2"]
    assert (stats[0].lines, stats[0].cut) == (2, 0)


def test_the_interrupt_hook_stops_the_scan_between_blocks(tmp_path, monkeypatch):
    import engine.blocks as blocks_module

    monkeypatch.setattr(blocks_module, "BLOCK_BYTES", 64)
    path = write_bundle(
        tmp_path, logs={"node01/syslog.log": [f"Nov  2 10:00:00 node01 k: line {i}" for i in range(50)]}
    )
    calls = []

    def interrupt():
        calls.append(1)
        if len(calls) == 3:
            raise PastTheLimit

    with pytest.raises(PastTheLimit):
        Extractor(parse_ruleset([("t.yaml", RULES)])).extract(load_bundle(path), interrupt=interrupt)
    assert len(calls) == 3


class PastTheLimit(Exception):
    pass


def test_an_unreadable_stream_is_reported_not_fatal(tmp_path):
    def refuse():
        raise PermissionError(13, "Permission denied")

    context = load_bundle(write_bundle(tmp_path))
    context = replace(context, streams=(LogStream("logs/node01/syslog.log", "syslog", "node01", refuse),))
    _, stats = Extractor(parse_ruleset([("t.yaml", RULES)])).extract(context)
    assert stats[0].error == "unreadable (Permission denied)"


def test_prefilter_loosening_keeps_a_superset():
    assert loosen(r"^(?P<exc>\w+Error): (?P<msg>.*)$") == r"(?:\w+Error): (?:.*)"
    assert loosen(r"[^a^b]x\^y") == r"[^a^b]x\^y"


def test_hyperscan_and_re2_set_find_the_same_candidate_lines(monkeypatch):
    import engine.prefilter as prefilter

    patterns = [r"NVRM: Xid \(PCI:(?P<pci>[^)]+)\): (?P<xid>\d+)", r"(?i)link down", r"^KeyError: "]
    block = b"a\nNVRM: Xid (PCI:0:1): 79, x\nmlx5 Link DOWN\n[rank1]: KeyError: 'x'\nnothing\n"
    fast = Prefilter(patterns)
    monkeypatch.setattr(prefilter, "hyperscan", None)
    slow = Prefilter(patterns)
    assert (fast.engine, slow.engine) == ("hyperscan", "re2.Set")
    assert fast.scan(block, len(block)) == slow.scan(block, len(block)) == [(2, 0), (29, 1), (44, 2)]
    assert fast.scan(block, 67, 29) == slow.scan(block, 67, 29) == [(29, 1), (44, 2)]  # from offset 29 on


def test_a_pattern_reported_once_is_reported_at_its_first_line(tmp_path):
    patterns = [r"step \d+ loss", r"(?i)link down"]
    block = b"step 1 loss 2\nlink down\nstep 2 loss 1\nLINK DOWN\nstep 3 loss 0\n"
    assert Prefilter(patterns).scan(block, len(block)) == [(0, 0), (14, 1), (24, 0), (38, 1), (48, 0)]
    for cache in (None, tmp_path, tmp_path):  # fresh, compiled into the cache, loaded from it
        once = Prefilter(patterns, cache, once=frozenset({0}))
        assert once.scan(block, len(block)) == [(0, 0), (14, 1), (38, 1)]
        assert once.scan(block, len(block), 14) == [(14, 1), (24, 0), (38, 1)]


def test_matches_kept_apart_lie_on_the_lines_scan_gives_them(monkeypatch):
    import engine.prefilter as prefilter
    from engine.blocks import lines_back

    patterns = [r"step \d+ loss", r"(?i)link down", r"loss \d"]
    block = b"step 1 loss 2 step 2 loss 3\nlink down\n\nstep 3 loss 1 LINK DOWN\nnothing\nstep 4 loss 0"
    apart = [True, False, True]
    fast = Prefilter(patterns)
    monkeypatch.setattr(prefilter, "hyperscan", None)
    slow = Prefilter(patterns)
    for scanner in (fast, slow):
        every = scanner.scan(block, len(block))
        assert every == [(0, 0), (0, 2), (28, 1), (39, 0), (39, 1), (39, 2), (71, 0), (71, 2)]
        hits, kept = scanner.scan_apart(block, len(block), apart)
        assert hits == [(28, 1), (39, 1)]  # the other patterns' lines, as scan gives them
        assert list(lines_back(block, kept, len(patterns))) == [(71, [0, 2]), (39, [0, 2]), (0, [0, 2])]


def test_a_cached_pattern_database_scans_like_a_fresh_one_and_a_corrupt_one_is_rebuilt(tmp_path):
    patterns = [r"NVRM: Xid \(PCI:(?P<pci>[^)]+)\): (?P<xid>\d+)", r"(?i)link down"]
    block = b"a\nNVRM: Xid (PCI:0:1): 79, x\nmlx5 Link DOWN\n"
    fresh = Prefilter(patterns, tmp_path).scan(block, len(block))
    (cached,) = tmp_path.glob("hyperscan-*.db")
    assert Prefilter(patterns, tmp_path).scan(block, len(block)) == fresh == [(2, 0), (29, 1)]
    cached.write_bytes(b"not a database")
    assert Prefilter(patterns, tmp_path).scan(block, len(block)) == fresh
