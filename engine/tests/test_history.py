"""History as evidence (docs/rules.md, "History"; docs/bundles.md, history/): a generic symptom on a node with a
hardware verdict of record in the window nominates that node; a bundle without history/ is diagnosed as before."""

import json
import shutil
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import pytest

from engine import Engine, load_rules, to_json
from engine.bundle import load_bundle, write_bundle
from engine.tests.bundles import DEFAULT_PACK, START, default_engine, gpu_off_the_bus

EARLIER_END = "2026-11-01T10:00:00Z"  # the day before the bundles' attempt (START is 2026-11-02 10:00 UTC)

PREVIOUS = {"attempt": 0, "start": "2026-11-01T09:00:00Z", "end": EARLIER_END, "state": "FAILED",
            "outcome": "attributed", "domain": "hardware", "subdomain": "gpu.bus", "nodes": ["node02"]}  # fmt: skip


def _history(folder: Path, verdicts: list[dict], attempts: list[dict] | None = None) -> None:
    (folder / "history").mkdir()
    (folder / "history" / "nodes.json").write_text(json.dumps({"window_days": 14, "verdicts": verdicts}))
    (folder / "history" / "attempts.json").write_text(json.dumps(attempts or []))


def _verdict(node: str, *, domain: str = "hardware", subdomain: str = "gpu.bus", end: str = EARLIER_END) -> dict:
    return {"node": node, "cluster": "dgx-a", "job_id": "48213", "attempt": 0, "end": end, "outcome": "attributed",
            "domain": domain, "subdomain": subdomain, "reviewed": True}  # fmt: skip


@pytest.fixture
def requeue(tmp_path):
    """The requeue of job 48213 (attempt 1): only NCCL watchdog timeouts this time, no cause in any log."""
    return gpu_off_the_bus(tmp_path / "requeue", faulty=None, attempt=1)


def test_a_requeue_onto_the_node_that_failed_before_names_it_first(requeue):
    before = default_engine().diagnose(load_bundle(requeue))
    assert before["outcome"] == "unattributed"
    assert before["candidates"] == []
    _history(requeue, [_verdict("node02")], [PREVIOUS])
    after = default_engine().diagnose(load_bundle(requeue))
    assert after["outcome"] == "ambiguous"
    assert after["root_cause"] is None
    lead = after["candidates"][0]
    assert (lead["rule"], lead["nodes"], lead["domain"], lead.get("nominated")) == (
        "history.hardware_before",
        ["node02"],
        "hardware",
        True,
    )
    assert "dgx-a/48213#0 (hardware/gpu.bus)" in lead["summary"]
    history = [item for item in after["evidence"] if item["source"] == "history"]
    assert len(history) == 1
    assert history[0]["node"] == "node02"
    assert history[0]["ref"] == "history/nodes.json#0"
    assert "root cause of dgx-a/48213#0" in history[0]["text"]


@pytest.mark.parametrize(
    "verdict",
    [
        _verdict("node02", domain="application", subdomain="cuda_oom"),  # not hardware
        _verdict("node02", end="2026-10-15T10:00:00Z"),  # past the 14 days
        _verdict("node02", end="2026-11-02T10:20:00Z"),  # ended after this attempt started
        _verdict("node09"),  # not a node of the attempt
    ],
)
def test_history_outside_the_rule_changes_nothing(requeue, verdict):
    before = to_json(default_engine().diagnose(load_bundle(requeue)))
    _history(requeue, [verdict])
    assert to_json(default_engine().diagnose(load_bundle(requeue))) == before


def test_history_never_outweighs_a_cause_in_the_logs(tmp_path):
    bundle = gpu_off_the_bus(tmp_path / "b", faulty="node03")  # Xid 79 on node03 this time
    _history(bundle, [_verdict("node02")])
    diagnosis = default_engine().diagnose(load_bundle(bundle))
    assert diagnosis["outcome"] == "attributed"
    assert diagnosis["root_cause"]["nodes"] == ["node03"]


def test_a_bundle_without_history_is_diagnosed_as_without_the_history_rules(tmp_path):
    """The history rules give nothing without history/: the same document as the pack without them (but for the
    rule set's own digest), for a failure, a requeue and a clean run."""
    pack = tmp_path / "pack"
    shutil.copytree(DEFAULT_PACK, pack)
    (pack / "history.yaml").unlink()
    without = Engine(load_rules(pack))
    for bundle in (
        gpu_off_the_bus(tmp_path / "a"),
        gpu_off_the_bus(tmp_path / "b", faulty=None, attempt=1),
        gpu_off_the_bus(tmp_path / "c", faulty=None, state="COMPLETED", start=START + timedelta(days=1)),
    ):
        context = load_bundle(bundle)
        assert context.history is None
        mine, theirs = default_engine().diagnose(context), without.diagnose(context)
        mine.pop("ruleset"), theirs.pop("ruleset")
        assert to_json(mine) == to_json(theirs)


def test_history_is_written_and_read_back(requeue, tmp_path):
    _history(requeue, [_verdict("node02"), _verdict("node03", subdomain="gpu.memory")], [PREVIOUS])
    context = load_bundle(requeue)
    write_bundle(context, tmp_path / "again")
    back = load_bundle(tmp_path / "again")
    assert back.history == context.history
    assert [v.ref for v in back.history.nodes] == ["history/nodes.json#0", "history/nodes.json#1"]
    assert back.history.attempts[0].nodes == ("node02",)
    assert to_json(default_engine().diagnose(back)) == to_json(default_engine().diagnose(context))


def test_an_unusable_history_is_reported_not_fatal(requeue):
    _history(requeue, [{"node": "node02", "end": "yesterday"}])
    context = load_bundle(requeue)
    assert context.history is None
    diagnosis = default_engine().diagnose(context)
    [report] = [source for source in diagnosis["sources"] if source["name"] == "history"]
    assert report["status"] == "unreadable"
    assert "history/nodes.json: verdict 0" in report["detail"]


def test_the_rule_language_checks_a_history_matcher(tmp_path):
    from engine import RuleSetError

    rule = """rules:
  - id: h
    description: d
    history: {symptoms: {tags: [nope]}, domains: [hardwre], within: 2x}
    role: symptom
  - id: h2
    description: d
    history: {symptoms: {rules: [h]}, domains: [hardware]}
    role: symptom
"""
    (tmp_path / "r.yaml").write_text(rule)
    with pytest.raises(RuleSetError) as raised:
        load_rules(tmp_path / "r.yaml")
    message = str(raised.value)
    assert "history.domains" in message
    assert "history.within" in message
    assert "it nominates a cause" in message


def test_history_of_a_context_is_input_like_any_other(requeue):
    context = load_bundle(requeue)
    assert replace(context, history=None) == context
