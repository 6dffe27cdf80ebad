"""Attribution: scope, conditions, explanation, ranking and the outcome, on small rule sets."""

import pytest

from engine import Engine, parse_ruleset
from engine.tests.bundles import diagnose_bundle, write_bundle

RULES = """
x-cascade: &cascade
  - {tags: [cascade, teardown], within: 1h, before: 1m}
settings:
  ambiguity_window: 5s
  late_window: 15m
rules:
  - id: gpu.bus
    description: GPU fell off the bus
    streams: [system]
    pattern: 'Xid \\(PCI:(?P<pci>[^)]+)\\): 79,'
    role: cause
    domain: hardware
    subdomain: gpu.bus
    precedence: 90
    summary: GPU {pci} fell off the bus on {node}
    explains: *cascade
    suppresses: [{rules: [xid45], within: 10m, scope: node}]
  - id: link.down
    description: InfiniBand port down
    streams: [system]
    pattern: 'Port: 1 Link DOWN'
    role: cause
    domain: network
    subdomain: link.infiniband
    precedence: 90
    explains: *cascade
  - id: keyerror
    description: A Python exception
    streams: [app]
    pattern: '^KeyError: '
    role: cause
    domain: application
    subdomain: exception
    precedence: 40
    explains: *cascade
  - id: import
    description: A missing module
    streams: [app]
    pattern: '^ModuleNotFoundError: '
    role: cause
    domain: application
    subdomain: config
    precedence: 55
    nodes: job
  - id: xid45
    description: Xid 45 teardown
    streams: [system]
    pattern: 'Xid \\(PCI:[^)]+\\): 45,'
    role: symptom
    kind: teardown
    tags: [teardown]
  - id: nccl.timeout
    description: NCCL watchdog timeout
    streams: [app]
    pattern: 'Watchdog caught collective operation timeout'
    role: symptom
    tags: [cascade]
  - id: hung
    description: hung task, counts only when repeated
    streams: [system]
    pattern: 'blocked for more than 120 seconds'
    role: cause
    domain: storage
    subdomain: filesystem
    precedence: 70
    count: {min: 3, within: 10m}
  - id: ecc.app
    description: the app saw an ECC error, only with a kernel Xid on the node
    streams: [app]
    pattern: 'uncorrectable ECC error'
    role: cause
    domain: hardware
    subdomain: gpu.memory
    precedence: 85
    not_solo: {rules: [gpu.bus], within: 1m, before: 1m, scope: node}
"""

ENGINE = Engine(parse_ruleset([("rules.yaml", RULES)]))


def syslog(node: str, *lines: tuple[str, str]) -> dict[str, list[str]]:
    return {f"{node}/syslog.log": [f"Nov  2 {time} {node} kernel: {text}" for time, text in lines]}


def timeouts(*nodes: str, at: str = "10:24:07") -> dict[str, list[str]]:
    return {
        f"{node}/train.log": [
            f"[rank0]:[E1102 {at}.1 ProcessGroupNCCL.cpp:607] Watchdog caught collective operation timeout"
        ]
        for node in nodes
    }


def run(tmp_path, logs, **attempt) -> dict:
    return diagnose_bundle(write_bundle(tmp_path, logs=logs, **attempt), ENGINE)


def test_one_fault_is_the_root_and_the_timeouts_its_cascade(tmp_path):
    logs = {**syslog("node02", ("10:14:07", "NVRM: Xid (PCI:0000:3b:00): 79, GPU")), **timeouts("node01", "node03")}
    result = run(tmp_path, logs)
    assert result["outcome"] == "attributed"
    assert (result["domain"], result["subdomain"]) == ("hardware", "gpu.bus")
    assert result["root_cause"]["nodes"] == ["node02"]
    assert result["root_cause"]["summary"] == "GPU 0000:3b:00 fell off the bus on node02"
    assert result["root_cause"]["time"] == "2026-11-02T10:14:07Z"
    assert result["symptoms"] == [
        {"rule": "nccl.timeout", "role": "cascade", "nodes": ["node01", "node03"], "count": 2,
         "first": "2026-11-02T10:24:07.100Z", "summary": "NCCL watchdog timeout"},
    ]  # fmt: skip
    assert result["affected_nodes"] == ["node01", "node02", "node03"]
    assert result["evidence"][0]["role"] == "root_cause"
    assert result["evidence"][0]["ref"] == "logs/node02/syslog.log:1"


def test_nothing_but_symptoms_is_unattributed(tmp_path):
    result = run(tmp_path, timeouts(*["node01", "node02", "node03", "node04"]))
    assert result["outcome"] == "unattributed"
    assert (result["domain"], result["subdomain"], result["root_cause"]) == (None, None, None)
    assert result["symptoms"][0]["count"] == 4


def test_two_faults_of_equal_precedence_seconds_apart_are_ambiguous(tmp_path):
    logs = {
        **syslog("node02", ("10:14:07", "NVRM: Xid (PCI:0000:3b:00): 79, GPU")),
        **syslog("node03", ("10:14:08", "mlx5_core 0000:40:00.0 mlx5_0: Port: 1 Link DOWN")),
    }
    result = run(tmp_path, logs)
    assert result["outcome"] == "ambiguous"
    assert (result["domain"], result["subdomain"], result["root_cause"]) == ("ambiguous", "ambiguous", None)
    assert sorted(node for c in result["candidates"] for node in c["nodes"]) == ["node02", "node03"]


def test_the_earlier_of_two_faults_minutes_apart_is_the_root(tmp_path):
    logs = {
        **syslog("node02", ("10:14:07", "NVRM: Xid (PCI:0000:3b:00): 79, GPU")),
        **syslog("node03", ("10:16:07", "mlx5_core 0000:40:00.0 mlx5_0: Port: 1 Link DOWN")),
    }
    result = run(tmp_path, logs)
    assert result["outcome"] == "attributed"
    assert result["root_cause"]["rule"] == "gpu.bus"


def test_precedence_beats_an_earlier_application_error_within_the_late_window(tmp_path):
    logs = {
        "node01/train.log": ["[2026-11-02 10:14:00,000] step", "KeyError: 'x'"],
        **syslog("node02", ("10:20:07", "NVRM: Xid (PCI:0000:3b:00): 79, GPU")),
    }
    assert run(tmp_path, logs)["root_cause"]["rule"] == "gpu.bus"


def test_a_cause_long_after_the_first_is_a_consequence(tmp_path):
    logs = {
        "node01/train.log": ["[2026-11-02 09:30:00,000] KeyError: 'x'"],
        **syslog("node02", ("10:20:07", "NVRM: Xid (PCI:0000:3b:00): 79, GPU")),
    }
    result = run(tmp_path, logs)
    assert result["root_cause"]["rule"] == "keyerror"
    assert result["root_cause"]["nodes"] == ["node01"]


def test_events_outside_the_window_or_off_the_attempts_nodes_are_never_causes(tmp_path):
    logs = {
        **syslog("node02", ("07:14:07", "NVRM: Xid (PCI:0000:3b:00): 79, stale")),
        "syslog.log": ["Nov  2 10:14:07 other-host kernel: NVRM: Xid (PCI:0000:3b:00): 79, foreign"],
        **timeouts("node01"),
    }
    result = run(tmp_path, logs)
    assert result["outcome"] == "unattributed"


def test_teardown_is_suppressed_and_reported_apart_from_the_cascade(tmp_path):
    logs = syslog(
        "node02",
        ("10:14:07", "NVRM: Xid (PCI:0000:3b:00): 79, GPU"),
        ("10:14:08", "NVRM: Xid (PCI:0000:5d:00): 45, pid=1, Ch 3 caused by previous Xid 79"),
    )
    result = run(tmp_path, logs)
    assert [(s["rule"], s["role"]) for s in result["symptoms"]] == [("xid45", "teardown")]


def test_a_job_level_cause_names_no_node(tmp_path):
    logs = {
        f"{n}/train.log": ["[2026-11-02 09:00:05,000] start", "ModuleNotFoundError: x"] for n in ("node01", "node02")
    }
    result = run(tmp_path, logs)
    assert (result["subdomain"], result["root_cause"]["nodes"]) == ("config", [])


def test_the_same_cause_on_every_node_belongs_to_the_job(tmp_path):
    logs = {
        f"{n}/train.log": ["[2026-11-02 10:00:00,000] start", "KeyError: 'x'"]
        for n in ("node01", "node02", "node03", "node04")
    }
    assert run(tmp_path, logs)["root_cause"]["nodes"] == []


def test_a_count_threshold_must_be_reached(tmp_path):
    hung = "INFO: task python:1 blocked for more than 120 seconds."
    twice = syslog("node01", ("10:00:00", hung), ("10:02:00", hung.replace("python:1", "python:2")))
    assert run(tmp_path / "a", twice)["outcome"] == "unattributed"
    thrice = syslog(
        "node01", ("10:00:00", hung), ("10:02:00", hung.replace(":1", ":2")), ("10:04:00", hung.replace(":1", ":3"))
    )
    assert run(tmp_path / "b", thrice)["subdomain"] == "filesystem"


def test_a_not_solo_condition_needs_its_companion(tmp_path):
    app = {"node02/train.log": ["[2026-11-02 10:14:08,000] x", "CUDA error: uncorrectable ECC error encountered"]}
    assert run(tmp_path / "a", app)["outcome"] == "unattributed"
    with_xid = {**app, **syslog("node02", ("10:14:07", "NVRM: Xid (PCI:0000:3b:00): 79, GPU"))}
    result = run(tmp_path / "b", with_xid)
    assert result["outcome"] == "attributed"


def test_mutual_explanation_is_won_by_the_higher_ranked_cause(tmp_path):
    rules = RULES.replace(
        "    explains: *cascade\n    suppresses:", "    explains: [{rules: [link.down], within: 1h}]\n    suppresses:"
    )
    rules = rules.replace(
        "    precedence: 90\n    explains: *cascade\n  - id: keyerror",
        "    precedence: 80\n    explains: [{rules: [gpu.bus], within: 1h, before: 1h}]\n  - id: keyerror",
    )
    assert rules.count("explains: [{rules: [link.down]") == rules.count("explains: [{rules: [gpu.bus]") == 1
    engine = Engine(parse_ruleset([("rules.yaml", rules)]))
    logs = {
        **syslog("node02", ("10:14:07", "NVRM: Xid (PCI:0000:3b:00): 79, GPU")),
        **syslog("node03", ("10:14:08", "mlx5_core 0000:40:00.0 mlx5_0: Port: 1 Link DOWN")),
    }
    result = diagnose_bundle(write_bundle(tmp_path, logs=logs), engine)
    assert result["root_cause"]["rule"] == "gpu.bus"
    assert [(s["rule"], s["role"]) for s in result["symptoms"]] == [("link.down", "cascade")]


@pytest.mark.parametrize("state", ["FAILED", "NODE_FAIL"])
def test_sources_report_what_was_and_was_not_available(tmp_path, state):
    logs = {**syslog("node02", ("10:14:07", "x")), **timeouts("node01")}
    sources = {(s["name"], s["status"]): s["detail"] for s in run(tmp_path, logs, state=state)["sources"]}
    assert sources[("syslog", "ok")] == "1 node, 1 lines"
    assert sources[("system logs", "partial")] == "no system log for node01, node03, node04"
    assert ("metrics", "missing") in sources


def test_a_cause_dated_only_by_an_earlier_line_does_not_make_later_causes_late(tmp_path):
    logs = {
        "node01/train.log": ["[2026-11-02 09:05:00,000] step 1", "KeyError: 'x'"],  # its time is a lower bound
        **syslog("node02", ("10:20:07", "NVRM: Xid (PCI:0000:3b:00): 79, GPU")),
    }
    assert run(tmp_path, logs)["root_cause"]["rule"] == "gpu.bus"
