"""Hedged evidence (``hint``): a line that guesses at its cause nominates it; only corroboration the rule states
makes it a cause (docs/rules.md, "Hints")."""

import pytest

from engine import Engine, RuleSetError, parse_ruleset
from engine.tests.bundles import diagnose_bundle, write_bundle

RULES = """
x-cascade: &cascade
  - {tags: [cascade], within: 1h, before: 1m}
rules:
  - id: shm.bus_error
    description: A DataLoader worker died of a bus error; PyTorch guesses shared memory
    streams: [app]
    pattern: 'Bus error: /dev/shm is full'
    hint: 'Unexpected bus error encountered in worker\\. This might be caused by insufficient shared memory'
    corroboration: {rules: [shm.df], within: 10m, before: 1h, scope: node}
    role: cause
    domain: software
    subdomain: container
    precedence: 70
    nodes: node
    explains: *cascade
  - id: shm.df
    description: df shows /dev/shm full
    streams: [app]
    pattern: 'shm +\\S+ +\\S+ +\\S+ +100% /dev/shm'
    role: context
  - id: maybe.network
    description: A library that guesses the network or the peer
    streams: [app]
    hint: 'This may indicate a possible application crash on rank (?P<rank>\\d+) or a network set up issue'
    role: cause
    domain: network
    subdomain: link.ethernet
    alternatives: [{domain: application, subdomain: exception}]
    precedence: 50
    nodes: node
  - id: keyerror
    description: A Python exception
    streams: [app]
    pattern: '^KeyError: '
    role: cause
    domain: application
    subdomain: exception
    precedence: 40
    nodes: node
    explains: *cascade
  - id: oom
    description: Host out of memory
    streams: [system]
    pattern: 'Out of memory: Killed process'
    role: cause
    domain: application
    subdomain: host_oom
    precedence: 80
    nodes: node
    explains: *cascade
  - id: timeout
    description: NCCL watchdog timeout
    streams: [app]
    pattern: 'Watchdog caught collective operation timeout'
    role: symptom
    tags: [cascade]
"""

ENGINE = Engine(parse_ruleset([("rules.yaml", RULES)]))
HEDGED = "ERROR: Unexpected bus error encountered in worker. This might be caused by insufficient shared memory (shm)."


def train(node: str, *lines: str, at: str = "10:14") -> dict[str, list[str]]:
    return {f"{node}/train.log": [f"2026-11-02 {at}:{i:02d},000 {text}" for i, text in enumerate(lines)]}


def run(tmp_path, logs, **attempt) -> dict:
    return diagnose_bundle(write_bundle(tmp_path, logs=logs, **attempt), ENGINE)


def test_a_hint_alone_names_its_cause_without_attributing_it(tmp_path):
    result = run(
        tmp_path, {**train("node02", HEDGED), **train("node01", "Watchdog caught collective operation timeout")}
    )
    assert result["outcome"] == "unattributed"
    assert (result["domain"], result["subdomain"], result["root_cause"]) == (None, None, None)
    [candidate] = result["candidates"]
    assert candidate["nominated"] is True
    assert (candidate["rule"], candidate["domain"], candidate["subdomain"]) == (
        "shm.bus_error",
        "software",
        "container",
    )
    assert candidate["nodes"] == ["node02"]
    assert result["evidence"][0]["role"] == "candidate"


def test_the_corroboration_the_rule_states_makes_a_hint_a_cause(tmp_path):
    df = "shm              64M   64M     0 100% /dev/shm"
    result = run(tmp_path, train("node02", df, HEDGED))
    assert result["outcome"] == "attributed"
    assert (result["domain"], result["subdomain"], result["root_cause"]["nodes"]) == (
        "software",
        "container",
        ["node02"],
    )
    assert result["candidates"] == []


def test_corroboration_on_another_node_does_not_count(tmp_path):
    df = "shm              64M   64M     0 100% /dev/shm"
    result = run(tmp_path, {**train("node01", df), **train("node02", HEDGED)})
    assert result["outcome"] == "unattributed"


def test_a_firm_pattern_of_the_same_rule_attributes(tmp_path):
    result = run(tmp_path, train("node02", "Bus error: /dev/shm is full"))
    assert result["outcome"] == "attributed"


def test_a_hint_whose_line_may_mean_two_things_is_ambiguous_between_them(tmp_path):
    line = "Timed out after 1800 s. This may indicate a possible application crash on rank 0 or a network set up issue."
    result = run(tmp_path, train("node03", line))
    assert result["outcome"] == "ambiguous"
    assert {(c["domain"], c["subdomain"]) for c in result["candidates"]} == {
        ("network", "link.ethernet"), ("application", "exception"),
    }  # fmt: skip
    assert all(c["nominated"] for c in result["candidates"])


def test_a_hint_outranking_an_established_cause_makes_the_diagnosis_ambiguous_between_them(tmp_path):
    result = run(tmp_path, train("node02", HEDGED, "KeyError: 'labels'"))
    assert result["outcome"] == "ambiguous"
    assert [(c["rule"], c.get("nominated", False)) for c in result["candidates"]] == [
        ("shm.bus_error", True), ("keyerror", False),
    ]  # fmt: skip


def test_an_established_cause_that_outranks_a_hint_stands(tmp_path):
    logs = {
        **train("node02", HEDGED),
        "node02/syslog.log": ["Nov  2 10:13:58 node02 kernel: Out of memory: Killed process 7"],
    }
    result = run(tmp_path, logs)
    assert result["outcome"] == "attributed"
    assert result["root_cause"]["rule"] == "oom"


def test_a_hint_never_explains_a_cause_away(tmp_path):
    """The hint's cascade takes symptoms, not the exception the log states: that stays a candidate."""
    result = run(tmp_path, {**train("node02", HEDGED), **train("node01", "KeyError: 'x'", at="10:15")})
    assert {c["rule"] for c in result["candidates"]} == {"shm.bus_error", "keyerror"}


@pytest.mark.parametrize(
    ("rule", "error"),
    [
        ("{id: a, description: d, streams: [app], hint: 'x', role: context}", "field 'hint': only causes have hints"),
        (
            "{id: a, description: d, streams: [app], pattern: 'x', role: cause, domain: application,"
            " subdomain: exception, corroboration: {tags: [t]}}",
            "field 'corroboration': only a rule with hint patterns needs corroboration",
        ),
    ],
)
def test_hints_are_validated(rule, error):
    other = "{id: b, description: d, streams: [app], pattern: y, role: context, tags: [t]}"
    with pytest.raises(RuleSetError) as raised:
        parse_ruleset(
            [
                (
                    "r.yaml",
                    f"rules:\n  - {rule}\n  - {other}\n",
                )
            ]
        )
    assert error in str(raised.value)
