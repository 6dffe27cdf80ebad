"""Scope: whether a cause is a node's or the whole job's, stated by its rule (``nodes: node | job | auto`` and
``local``), and the hosts the scheduler's own words name (docs/rules.md, "Scope")."""

import pytest

from engine import Engine, RuleSetError, load_rules, parse_ruleset
from engine.tests.bundles import DEFAULT_PACK, diagnose_bundle, write_bundle

RULES = """
x-local: &local '^/(?:tmp|raid)/'
rules:
  - id: lustre
    description: A Lustre client lost its servers
    streams: [system]
    pattern: 'Lustre: (?P<target>\\S+): Connection to \\S+ was lost'
    role: cause
    domain: storage
    subdomain: filesystem
    precedence: 75
    nodes: auto
    local: {alone: true}
  - id: enospc
    description: No space left on device
    streams: [app]
    pattern: '\\[Errno 28\\] No space left on device(?:: ''(?P<path>[^'']+)'')?'
    role: cause
    domain: storage
    subdomain: capacity
    precedence: 70
    nodes: auto
    local: {where: {path: {matches: *local}}, context: [{rules: [saving], before: 1h, within: 0s}]}
  - id: saving
    description: where the job saves
    streams: [app]
    pattern: 'saving checkpoint to (?P<path>/\\S+)'
    role: note
  - id: config
    description: A configuration error every rank would raise
    streams: [app]
    pattern: '^ModuleNotFoundError: '
    role: cause
    domain: application
    subdomain: config
    precedence: 55
    nodes: job
  - id: lost
    description: srun saw a node fail
    streams: [app]
    pattern: 'srun: error: Node failure on (?P<host>[\\w.-]+)'
    node_from: host
    role: cause
    domain: infrastructure
    subdomain: node_lost
    precedence: 75
    nodes: node
  - id: panic
    description: kernel panic
    streams: [system]
    pattern: 'Kernel panic'
    role: cause
    domain: hardware
    subdomain: host.kernel
    precedence: 92
    nodes: node
  - id: node_fail
    description: the scheduler says a node failed
    attempt: {state: [NODE_FAIL]}
    role: cause
    domain: infrastructure
    subdomain: node_lost
    precedence: 75
    nodes: node
"""

ENGINE = Engine(parse_ruleset([("rules.yaml", RULES)]))
LOST = "Lustre: scratch-MDT0000-mdc: Connection to scratch-MDT0000 was lost"


def syslog(node: str, *texts: str) -> dict[str, list[str]]:
    return {f"{node}/syslog.log": [f"Nov  2 10:{i + 10:02d}:00 {node} kernel: {text}" for i, text in enumerate(texts)]}


def app(node: str | None, *texts: str) -> dict[str, list[str]]:
    return {
        f"{node}/train.log" if node else "train.log": [
            f"2026-11-02 10:{i + 10:02d}:00,000 {t}" for i, t in enumerate(texts)
        ]
    }


def run(tmp_path, logs, **attempt) -> dict:
    return diagnose_bundle(write_bundle(tmp_path, logs=logs, **attempt), ENGINE)


def test_a_shared_file_system_seen_by_several_nodes_is_the_jobs(tmp_path):
    result = run(tmp_path, {**syslog("node01", LOST), **syslog("node02", LOST), **syslog("node03", "ok")})
    assert (result["subdomain"], result["root_cause"]["nodes"]) == ("filesystem", [])


def test_one_node_alone_losing_it_while_the_others_logs_are_clean_is_that_nodes_mount(tmp_path):
    result = run(tmp_path, {**syslog("node02", LOST), **syslog("node01", "ok"), **syslog("node03", "ok")})
    assert result["root_cause"]["nodes"] == ["node02"]


def test_one_node_seeing_it_with_no_other_nodes_logs_to_compare_is_the_jobs(tmp_path):
    result = run(tmp_path, syslog("node02", LOST))
    assert result["root_cause"]["nodes"] == []


@pytest.mark.parametrize(
    ("lines", "nodes"),
    [
        (["OSError: [Errno 28] No space left on device: '/raid/ckpt/step_100.pt'"], ["node02"]),
        (["OSError: [Errno 28] No space left on device: '/lustre/proj/ckpt/step_100.pt'"], []),
        (["OSError: [Errno 28] No space left on device"], []),
        (["saving checkpoint to /tmp/ckpt/step_100", "OSError: [Errno 28] No space left on device"], ["node02"]),
        (["saving checkpoint to /lustre/ckpt/step_100", "OSError: [Errno 28] No space left on device"], []),
    ],
)
def test_a_full_disk_is_the_nodes_only_on_a_node_local_path(tmp_path, lines, nodes):
    result = run(tmp_path, app("node02", *lines))
    assert (result["subdomain"], result["root_cause"]["nodes"]) == ("capacity", nodes)


def test_the_save_a_workload_level_line_announced_counts_for_the_node_that_failed(tmp_path):
    logs = {
        **app(None, "saving checkpoint to /raid/ckpt/step_100"),
        **app("node02", "OSError: [Errno 28] No space left on device"),
    }
    result = run(tmp_path, logs)
    assert result["root_cause"]["nodes"] == ["node02"]
    assert any(item["rule"] == "saving" and item["role"] == "context" for item in result["evidence"])


def test_a_configuration_error_only_rank_0_printed_is_the_jobs(tmp_path):
    result = run(tmp_path, app("node01", "ModuleNotFoundError: No module named 'fire'"))
    assert (result["subdomain"], result["root_cause"]["nodes"]) == ("config", [])


def test_a_host_the_jobs_own_output_names_is_a_node_of_the_attempt(tmp_path):
    """srun names node07, which the attempt's record lacks; its kernel's panic in the central syslog then counts."""
    logs = {
        **app(None, "srun: error: Node failure on node07"),
        "syslog.log": ["Nov  2 10:09:00 node07 kernel: Kernel panic - not syncing: Fatal exception"],
    }
    result = run(tmp_path, logs)
    assert (result["root_cause"]["rule"], result["root_cause"]["nodes"]) == ("panic", ["node07"])


def test_a_host_outside_the_attempt_in_a_central_syslog_still_does_not_count(tmp_path):
    logs = {"syslog.log": ["Nov  2 10:09:00 node07 kernel: Kernel panic - not syncing: Fatal exception"]}
    assert run(tmp_path, logs)["outcome"] == "unattributed"


def test_a_one_node_attempt_whose_scheduler_says_the_node_failed_names_that_node(tmp_path):
    result = run(tmp_path, {}, nodes=["gpu-7"], state="NODE_FAIL", tasks_per_node=1)
    assert (result["root_cause"]["rule"], result["root_cause"]["nodes"]) == ("node_fail", ["gpu-7"])


def test_several_nodes_scheduler_verdict_names_none(tmp_path):
    assert run(tmp_path, {}, state="NODE_FAIL")["root_cause"]["nodes"] == []


def test_every_cause_of_the_default_pack_states_its_scope():
    unstated = [
        rule.id for rule in load_rules(DEFAULT_PACK).rules if rule.role == "cause" and "nodes" not in rule.fields
    ]
    assert unstated == []


@pytest.mark.parametrize(
    ("fields", "error"),
    [
        ("nodes: auto", "field 'nodes': nodes: auto and local go together"),
        ("local: {alone: true}", "field 'local': nodes: auto and local go together"),
        ("nodes: auto, local: {alone: yes please}", "field 'local.alone': must be true or false"),
        (
            "nodes: auto, local: {where: {nope: {equals: 1}}}",
            "field 'local.where.nope': the pattern has no named capture",
        ),
    ],
)
def test_scope_is_validated(fields, error):
    rule = (
        "{id: a, description: d, streams: [app], pattern: '(?P<path>x)', role: cause, domain: storage,"
        f" subdomain: io, {fields}}}"
    )
    with pytest.raises(RuleSetError) as raised:
        parse_ruleset([("r.yaml", f"rules:\n  - {rule}\n")])
    assert error in str(raised.value)


@pytest.mark.parametrize(("second_at", "nodes"), [("10:20:00", ["node01"]), ("10:10:03", ["node01", "node02"])])
def test_a_cause_on_several_nodes_is_the_one_that_showed_it_first_by_a_clear_margin(tmp_path, second_at, nodes):
    logs = {
        "node01/syslog.log": ["Nov  2 10:10:00 node01 kernel: Kernel panic - not syncing: Fatal exception"],
        "node02/syslog.log": [f"Nov  2 {second_at} node02 kernel: Kernel panic - not syncing: Fatal exception"],
    }
    assert run(tmp_path, logs)["root_cause"]["nodes"] == nodes
