"""The rule explorer: which rules match a line, with captures, and why the others do not."""

from datetime import UTC, datetime
from pathlib import Path

import pytest
import yaml
from django.conf import settings

from engine import Engine, load_rules, parse_ruleset
from engine.context import Attempt, AttemptContext, LogStream, SchedulerEvent
from engine.node_names import NodeNames
from engine.normalise import Clock
from rules.revisions import pack_text
from workbench.explorer import explore
from workbench.tests.workbench import THERMAL_LINE, THERMAL_RULE

RULES = """
rules:
  - id: xid.bus
    description: Xid 79
    streams: [system]
    files: [syslog, "kern*"]
    pattern: 'NVRM: Xid \\(PCI:(?P<pci>[^)]+)\\): (?P<xid>\\d+),'
    where: {xid: {in: [79]}}
    role: cause
    domain: hardware
    subdomain: gpu.bus
  - id: app.boom
    description: a Python exception
    streams: [app]
    pattern: ['^RuntimeError: (?P<what>.*)', '^ValueError: (?P<what>.*)']
    role: symptom
  - id: slurm.job
    description: a line of our own job
    streams: [scheduler]
    pattern: 'job (?P<job>\\d+) failed'
    where: {job: {same_job: true}}
    role: context
  - id: timeout
    description: the scheduler's time limit
    attempt: {state: [TIMEOUT]}
    role: cause
    domain: scheduler
    subdomain: time_limit
  - id: straggler
    description: a rank that never entered a collective
    flight_recorder: {finding: [never_enqueued]}
    role: cause
    domain: software
    subdomain: nccl.straggler
"""
XID_79 = "Nov  2 10:14:07 node02 kernel: NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus."


@pytest.fixture(scope="module")
def ruleset():
    return parse_ruleset([("test.yaml", RULES)])


def verdict(exploration, rule_id):
    return next(v for v in exploration.verdicts if v.rule.id == rule_id)


def test_a_matching_rule_shows_its_captures(ruleset):
    found = explore(ruleset, XID_79, stream="syslog")

    assert [v.rule.id for v in found.matches] == ["xid.bus"]
    assert found.matches[0].captures == {"pci": "0000:3b:00", "xid": "79"}
    assert (found.parsed.host, found.parsed.message[:18]) == ("node02", "kernel: NVRM: Xid ")


def test_the_wrong_stream_kind_is_named(ruleset):
    found = explore(ruleset, XID_79, stream="torchrun")

    v = verdict(found, "xid.bus")
    assert (v.matched, v.failed) == (False, "streams")
    assert "looks at system streams; this line is from a app stream (torchrun)" in v.reason


def test_a_file_glob_that_excludes_the_stream_is_named(ruleset):
    v = verdict(explore(ruleset, XID_79, stream="dmesg"), "xid.bus")

    assert v.failed == "files"
    assert "syslog, kern*" in v.reason
    assert "'dmesg'" in v.reason
    assert verdict(explore(ruleset, XID_79, stream="kern"), "xid.bus").matched


def test_a_failed_where_filter_names_the_capture_and_its_value(ruleset):
    line = XID_79.replace("): 79,", "): 48,")

    v = verdict(explore(ruleset, line, stream="syslog"), "xid.bus")

    assert v.failed == "where"
    assert v.reason == "where.xid in [79]: the line's xid is '48'"
    assert v.captures["xid"] == "48"


def test_a_pattern_that_does_not_match_the_message_says_what_was_stripped(ruleset):
    v = verdict(explore(ruleset, "Nov  2 10:14:07 node02 kernel: something else", stream="syslog"), "xid.bus")

    assert v.failed == "pattern"
    assert v.reason == "its pattern does not match the message (the line after its timestamp, host 'node02')"


def test_any_of_several_patterns_may_match(ruleset):
    found = explore(ruleset, "[rank3]: ValueError: bad shape", stream="torchrun")

    assert verdict(found, "app.boom").captures == {"what": "bad shape"}
    assert found.parsed.rank == 3
    missed = verdict(explore(ruleset, "[rank3]: KeyError: x", stream="torchrun"), "app.boom")
    assert missed.reason.startswith("none of its patterns matches the message (the line after its rank prefix")


def test_same_job_needs_the_attempts_job(ruleset):
    line = "[2026-11-02T10:00:00.000] job 77 failed"

    assert verdict(explore(ruleset, line, stream="slurmd", job_id="77"), "slurm.job").matched
    other = verdict(explore(ruleset, line, stream="slurmd", job_id="12"), "slurm.job")
    assert other.reason == "where.job: the captured job '77' is not this attempt's job '12'"


def test_rules_that_read_no_log_lines_say_so(ruleset):
    v = verdict(explore(ruleset, XID_79), "timeout")

    assert (v.failed, v.reason) == (
        "matcher",
        "a attempt rule: it reads the scheduler's record of the attempt, not log lines",
    )
    v = verdict(explore(ruleset, XID_79), "straggler")
    assert v.reason == "a flight_recorder rule: it reads the attempt's PyTorch Flight Recorder dumps, not log lines"


def test_an_unknown_kind_is_refused(ruleset):
    with pytest.raises(ValueError, match="'metrics' is not a log stream kind"):
        explore(ruleset, XID_79, kind="metrics")


def test_the_default_pack_leaves_the_thermal_line_unmatched_and_the_new_rule_matches_it():
    default = load_rules(settings.FAULTLINE_RULES_PATH)
    with_rule = parse_ruleset([("default.yaml", pack_text(settings.FAULTLINE_RULES_PATH) + THERMAL_RULE)])
    around = datetime(2026, 11, 22, tzinfo=UTC)

    assert explore(default, THERMAL_LINE, around=around).matches == []
    found = explore(with_rule, THERMAL_LINE, around=around)
    assert [(v.rule.id, v.captures) for v in found.matches] == [("site.gpu.thermal", {"gpu": "3"})]
    assert found.parsed.time == datetime(2026, 11, 22, 16, 9, 46, tzinfo=UTC).timestamp()


CATALOG = Path(settings.BASE_DIR) / "rules" / "catalog"
MOMENT, END = datetime(2026, 1, 1, tzinfo=UTC), datetime(2026, 1, 2, tzinfo=UTC)
CATALOG_STREAMS = {"system": "syslog", "app": "train", "scheduler": "slurmctld", "events": "kubernetes"}


def catalog_lines() -> list[tuple[str, str, str]]:
    """(entry id, stream kind, line) of every message of the catalog (rules/catalog/README.md)."""
    out = []
    for path in sorted(CATALOG.glob("*.yaml")):
        for index, entry in enumerate(yaml.safe_load(path.read_text())["entries"]):
            out.append((f"{path.name}:{index}", entry["stream"], entry.get("line", entry["message"])))
    return out


@pytest.fixture(scope="module")
def default_engine_and_pack():
    pack = load_rules(Path(settings.BASE_DIR) / "rules" / "packs" / "default")
    return Engine(pack), pack


@pytest.mark.parametrize(("entry", "kind", "line"), catalog_lines(), ids=[c[0] for c in catalog_lines()])
def test_the_explorer_and_the_engine_agree_on_every_catalog_line(default_engine_and_pack, entry, kind, line):
    """The explorer's matches are exactly the rules whose events the engine extracts from the same line."""
    engine, pack = default_engine_and_pack
    stream = CATALOG_STREAMS[kind]
    nodes = NodeNames(("n1",))
    if kind == "events":
        reason, _, message = line.partition(": ")
        item = SchedulerEvent(time=None, node="n1", source=stream, reason=reason, message=message, ref="e")
        attempt = Attempt("c", "slurm", "", 0, ("n1",), MOMENT, END, "FAILED")
        found = engine.extractor.scheduler_events(AttemptContext(attempt=attempt, events=(item,)), nodes)
    else:
        log = LogStream.from_bytes(f"logs/n1/{stream}.log", stream, "n1", line.encode())
        found, stats = engine.extractor.scan_stream(log, Clock("UTC", MOMENT, END), nodes, {})
        found += [record.event for record in stats.progress.values()]
    explored = explore(pack, line, stream=stream, kind=kind, around=MOMENT)
    assert {v.rule.id for v in explored.matches} == {event.rule.id for event in found}
