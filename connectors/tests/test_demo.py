"""The demo scheduler (the ``demo`` kind): a watched folder whose drains and resumes are recorded in a file, never sent
to a node, and say so; unreachable nodes fail as a scheduler that cannot be reached would."""

import json
import threading

import pytest

from connectors.base import ConnectorError, NodeControl, Scheduler, build
from connectors.demo import RECORD, DemoScheduler
from connectors.settings_reader import SettingError


def demo(folder, **settings) -> DemoScheduler:
    return build("demo", "lab", {"path": str(folder), "settle_seconds": 0, "cluster": "lab", **settings},
                 role="scheduler")  # fmt: skip


def test_drains_and_resumes_are_recorded_and_say_they_touched_no_node(tmp_path):
    scheduler = demo(tmp_path)
    assert isinstance(scheduler, Scheduler)
    assert isinstance(scheduler, NodeControl)
    answer = scheduler.drain_node("node07", "faultline: xid 79")
    assert (
        answer
        == f"State=DRAIN Reason=faultline: xid 79 (demo scheduler, no node touched: recorded in {tmp_path / RECORD})"
    )
    assert scheduler.node_states()["node07"]["state"] == "DRAIN"
    assert scheduler.resume_node("node07").startswith("State=IDLE (demo scheduler, no node touched")
    record = json.loads((tmp_path / RECORD).read_text())
    assert record["nodes"]["node07"]["state"] == "IDLE"
    assert [(entry["node"], entry["action"], entry["reason"]) for entry in record["log"]] == [
        ("node07", "drain", "faultline: xid 79"),
        ("node07", "resume", ""),
    ]
    assert demo(tmp_path).discover(None)[0] == []  # the record is no bundle


def test_it_discovers_the_bundles_dropped_in_its_folder(tmp_path, write_bundle):
    write_bundle(tmp_path / "b1", logs={"out.log": ["x"]}, cluster="lab", scheduler="slurm", job_id="9",
                 nodes=["n1"], start="2026-11-02T10:00:00Z", end="2026-11-02T11:00:00Z")  # fmt: skip
    demo(tmp_path).drain_node("n1", "r")
    found, cursor = demo(tmp_path).discover(None)
    assert [d.attempt.job_id for d in found] == ["9"]
    assert json.loads(cursor) == ["b1"]
    assert demo(tmp_path).attempt_context(found[0]).attempt.job_id == "9"


def test_an_unreachable_node_fails_and_nothing_is_recorded(tmp_path):
    scheduler = demo(tmp_path, unreachable_nodes=["node09"])
    with pytest.raises(ConnectorError, match="node09 did not answer") as failed:
        scheduler.drain_node("node09", "r")
    assert not failed.value.permanent
    assert not (tmp_path / RECORD).exists()
    scheduler.drain_node("node08", "r")
    assert list(scheduler.node_states()) == ["node08"]


def test_bad_settings_and_a_broken_record_are_named(tmp_path):
    with pytest.raises(SettingError, match="'unreachable_nodes' must be a list"):
        demo(tmp_path, unreachable_nodes=[1])
    with pytest.raises(SettingError, match="'nodes' is not a setting"):
        demo(tmp_path, nodes=["a"])
    with pytest.raises(ConnectorError, match="not a directory"):
        demo(tmp_path / "missing").drain_node("n1", "r")
    (tmp_path / RECORD).write_text("[]")
    with pytest.raises(ConnectorError, match="not a demo scheduler's record"):
        demo(tmp_path).drain_node("n1", "r")


def test_commands_at_once_lose_no_entry(tmp_path):
    """Web processes and workers may run commands at once: each is recorded."""
    failures = []

    def drain(n):
        try:
            for i in range(20):
                demo(tmp_path).drain_node(f"node{n}-{i}", "r")
        except Exception as exc:  # reported below
            failures.append(exc)

    threads = [threading.Thread(target=drain, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    assert len(demo(tmp_path).node_states()) == 80
    assert len(json.loads((tmp_path / RECORD).read_text())["log"]) == 80
