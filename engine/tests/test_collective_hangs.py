"""Collective hangs from Flight Recorder dumps: the bundle carries them, the engine reads them safely, the default
pack names the rank that stopped and its node, a desync, or nothing for a healthy set; and it agrees with hangs.yaml.

The real cases are the dumps of engine/flight_recorder/tests/dumps/ with what torchrun printed in the same run, placed
on nodes by a rank map that is not rank order, so that the node named comes from the map.
"""

import json
import pickle
import shutil
from datetime import UTC, datetime
from pathlib import Path

import pytest

from engine import Engine, RuleSetError, load_rules, parse_ruleset, to_json
from engine.bundle import BundleError, load_bundle, write_bundle
from engine.flight_recorder import unpickle
from engine.tests.bundles import DEFAULT_PACK, diagnose_bundle
from engine.tests.bundles import write_bundle as make_bundle

DUMPS = Path(__file__).resolve().parents[1] / "flight_recorder" / "tests" / "dumps"
# rank -> node, two ranks per node but not in rank order: the rank map, not the rank, names the node
RANK_MAP = {0: "gpu-c", 1: "gpu-a", 2: "gpu-d", 3: "gpu-b", 4: "gpu-a", 5: "gpu-b", 6: "gpu-c", 7: "gpu-d"}


def real_case(tmp_path: Path, case: str, folder: str = "", **attempt) -> Path:
    made_by = json.loads((DUMPS / case / "MADE_BY.json").read_text())
    ranks = made_by["ranks"]
    traces = {path.name: path.read_bytes() for path in (DUMPS / case / folder).glob("rank_*")}
    placed = {rank: node for rank, node in RANK_MAP.items() if rank < ranks}
    record = {
        "nodes": sorted(set(placed.values())),
        "ranks": {str(rank): node for rank, node in placed.items()},
        # the job's window: as make_dumps.py recorded it (the torch 2.14.1 cases), else around the day's runs
        "start": made_by.get("started_at", "2026-12-03T12:45:00Z"),
        "end": made_by.get("ended_at", "2026-12-03T12:55:00Z"),
        **attempt,
    }
    logs = {"torchrun.log": (DUMPS / case / "torchrun.log").read_text()}
    return make_bundle(tmp_path / case, logs=logs, traces=traces, **record)


@pytest.mark.parametrize(
    ("case", "subdomain", "rule", "node"),
    [
        ("straggler", "nccl.straggler", "fr.never_entered", RANK_MAP[2]),
        ("dead", "nccl.straggler", "fr.no_dump", RANK_MAP[5]),
    ],
)
def test_the_rank_that_stopped_is_the_root_cause_on_its_node(tmp_path, case, subdomain, rule, node):
    made_by = json.loads((DUMPS / case / "MADE_BY.json").read_text())
    result = diagnose_bundle(real_case(tmp_path, case))
    assert (result["outcome"], result["domain"], result["subdomain"]) == ("attributed", "software", subdomain)
    root = result["root_cause"]
    assert (root["rule"], root["nodes"]) == (rule, [node])
    assert root["summary"].startswith(f"Rank {made_by['culprit']} on {node} ")
    assert "gloo:all_reduce #4" in root["summary"]
    # the Gloo timeouts of the ranks that waited are its cascade, torchrun's report teardown
    roles = {symptom["rule"]: symptom["role"] for symptom in result["symptoms"]}
    assert roles["c10d.peer_lost"] == "cascade"
    assert result["evidence"][0]["source"] == "flight_recorder"
    source = next(s for s in result["sources"] if s["name"] == "flight_recorder")
    assert (source["kind"], source["status"]) == ("traces", "ok")


@pytest.mark.parametrize(("case", "odd_rank"), [("wrong_op", 3), ("size_mismatch", 1), ("dtype_mismatch", 2)])
def test_a_desync_is_the_programs_collective_mismatch(tmp_path, case, odd_rank):
    result = diagnose_bundle(real_case(tmp_path, case))
    assert (result["outcome"], result["domain"], result["subdomain"]) == (
        "attributed",
        "application",
        "collective_mismatch",
    )
    root = result["root_cause"]
    assert root["rule"] == "fr.collective_mismatch"
    assert root["nodes"] == []  # the program's, not the node's
    assert root["summary"].startswith(f"Desynchronised program: rank {odd_rank} called ")
    # what followed the desync (rank 1 stopping at #5, rank 1 aborted by Gloo) is explained by it
    followers = [e for e in result["evidence"] if e["source"] == "flight_recorder" and e["role"] != "root_cause"]
    assert all(item["role"] == "cascade" for item in followers)
    if case != "wrong_op":
        assert followers


def test_a_healthy_set_leaves_the_diagnosis_to_the_other_rules(tmp_path):
    result = diagnose_bundle(real_case(tmp_path, "healthy"))
    assert result["outcome"] == "unattributed"
    assert not any(item["source"] == "flight_recorder" for item in result["evidence"])
    source = next(s for s in result["sources"] if s["name"] == "flight_recorder")
    assert source == {
        "name": "flight_recorder",
        "kind": "traces",
        "status": "ok",
        "detail": "4 dumps (pickle, version 2.10)",
    }


@pytest.mark.parametrize("case", ["healthy", "straggler"])
def test_json_dumps_give_the_same_diagnosis_as_pickles(tmp_path, case):
    pickles = diagnose_bundle(real_case(tmp_path / "pickle", case))
    jsons = diagnose_bundle(real_case(tmp_path / "json", case, "json"))
    assert [s for s in jsons["sources"] if s["name"] != "flight_recorder"] == [
        s for s in pickles["sources"] if s["name"] != "flight_recorder"
    ]
    assert {key: value for key, value in jsons.items() if key != "sources"} == {
        key: value for key, value in pickles.items() if key != "sources"
    }


def test_without_the_dumps_the_same_logs_name_no_rank(tmp_path):
    bundle = real_case(tmp_path, "straggler")
    shutil.rmtree(bundle / "traces")
    result = diagnose_bundle(bundle)
    assert result["outcome"] == "unattributed"


def test_the_bundle_writer_keeps_the_dumps_byte_for_byte(tmp_path):
    bundle = real_case(tmp_path, "dead")
    context = load_bundle(bundle)
    assert [trace.ref for trace in context.flight_recorder] == [
        f"traces/flight_recorder/rank_{rank}" for rank in (0, 1, 2, 3, 4, 6, 7)
    ]
    write_bundle(context, tmp_path / "copy")
    for name in ("rank_0", "rank_7"):
        assert (tmp_path / "copy" / "traces" / "flight_recorder" / name).read_bytes() == (
            DUMPS / "dead" / name
        ).read_bytes()
    assert to_json(diagnose_bundle(tmp_path / "copy")) == to_json(diagnose_bundle(bundle))


def test_two_dumps_of_one_name_are_refused_by_the_writer(tmp_path):
    context = load_bundle(real_case(tmp_path, "straggler"))
    doubled = context.__class__(attempt=context.attempt, flight_recorder=context.flight_recorder * 2)
    with pytest.raises(BundleError, match="traces/flight_recorder/rank_0: two trace files of this name"):
        write_bundle(doubled, tmp_path / "copy")


class _Marker:
    """A pickle that would create a file if it were ever unpickled with the standard loader."""

    def __init__(self, path: Path):
        self.path = path

    def __reduce__(self):
        return (Path.touch, (self.path,))


def test_a_pickle_that_would_run_code_is_refused_and_reported_never_run(tmp_path):
    marker = tmp_path / "ran"
    bundle = real_case(tmp_path, "straggler")
    (bundle / "traces" / "flight_recorder" / "rank_1").write_bytes(pickle.dumps({"version": _Marker(marker)}))
    result = diagnose_bundle(bundle)
    assert not marker.exists()
    source = next(s for s in result["sources"] if s["name"] == "flight_recorder")
    assert source["status"] == "partial"
    assert "traces/flight_recorder/rank_1: refused pickle opcode" in source["detail"]
    # the other ranks still name rank 2; rank 1, unreadable, is not taken for a rank that left no dump
    assert (result["root_cause"]["rule"], result["root_cause"]["nodes"]) == ("fr.never_entered", [RANK_MAP[2]])
    assert not any("rank 1 left no dump" in item["text"] for item in result["evidence"])


def test_unreadable_folders_and_files_are_gaps_never_fatal(tmp_path, monkeypatch):
    bundle = real_case(tmp_path, "straggler")
    folder = bundle / "traces" / "flight_recorder"
    (folder / "nccl_trace_rank_9").write_bytes(b"{}")
    (folder / "json").mkdir()
    result = diagnose_bundle(bundle)
    source = next(s for s in result["sources"] if s["name"] == "flight_recorder")
    assert source["status"] == "unreadable"
    assert "dumps with several prefixes (nccl_trace_rank_, rank_)" in source["detail"]
    assert {"name": "json", "kind": "traces", "status": "unreadable",
            "detail": "traces/flight_recorder/json: not a file; ignored"} in result["sources"]  # fmt: skip
    assert result["outcome"] == "unattributed"

    (folder / "nccl_trace_rank_9").unlink()
    monkeypatch.setattr(unpickle, "MAX_BYTES", 1000)
    source = next(s for s in diagnose_bundle(bundle)["sources"] if s["name"] == "flight_recorder")
    assert source["status"] == "unreadable"
    assert "traces/flight_recorder/rank_0: more than the 1,000 bytes a dump may have" in source["detail"]


def test_other_files_are_ignored_and_said_so(tmp_path):
    bundle = real_case(tmp_path, "straggler")
    shutil.copy(DUMPS / "straggler" / "MADE_BY.json", bundle / "traces" / "flight_recorder")
    result = diagnose_bundle(bundle)
    source = next(s for s in result["sources"] if s["name"] == "flight_recorder")
    assert source["detail"] == "4 dumps (pickle, version 2.10); 1 other file ignored (MADE_BY.json)"
    assert result["root_cause"]["rule"] == "fr.never_entered"


def test_without_a_rank_map_a_multi_node_culprit_has_no_node(tmp_path):
    bundle = real_case(tmp_path, "straggler")
    record = json.loads((bundle / "attempt.json").read_text())
    del record["ranks"], record["tasks_per_node"]
    (bundle / "attempt.json").write_text(json.dumps(record))
    result = diagnose_bundle(bundle)
    assert (result["root_cause"]["rule"], result["root_cause"]["nodes"]) == ("fr.never_entered", [])
    assert result["root_cause"]["summary"].startswith("Rank 2 (not placed on a node) never entered gloo:all_reduce #4")
    source = next(s for s in result["sources"] if s["name"] == "flight_recorder")
    assert "ranks not placed on nodes" in source["detail"]


# -- the case: NCCL, 16 ranks on 4 nodes, every rank's watchdog times out on all_reduce #3106 --------------


def nccl_entry(seq: int, state: str, created: int) -> dict:
    """One entry in NCCL's field set (FlightRecorder.hpp, version 2.10)."""
    return {
        "record_id": seq, "pg_id": 0, "process_group": ("0", "default_pg"), "collective_seq_id": seq,
        "p2p_seq_id": 0, "op_id": seq, "profiling_name": "nccl:all_reduce", "time_created_ns": created,
        "input_sizes": [[1024]], "input_dtypes": ["BFloat16"], "output_sizes": [[1024]], "output_dtypes": ["BFloat16"],
        "state": state, "time_discovered_started_ns": None if state == "scheduled" else created + 1000,
        "time_discovered_completed_ns": created + 2000 if state == "completed" else None,
        "retired": state == "completed", "timeout_ms": 1_800_000, "is_p2p": False, "thread_id": "1",
        "thread_name": "pt_main_thread",
        "frames": [{"name": "all_reduce", "filename": "distributed_c10d.py", "line": 2501}],
    }  # fmt: skip


HANG_AT = int(datetime(2026, 11, 2, 9, 40, tzinfo=UTC).timestamp())  # just after the last progress line
WATCHDOG = (
    "[rank{r}]:[E1102 10:10:00.000000000 ProcessGroupNCCL.cpp:616] [Rank {r}] Watchdog caught collective operation"
    " timeout: WorkNCCL(SeqNum=3106, OpType=ALLREDUCE, NumelIn=1024, NumelOut=1024, Timeout(ms)=1800000) ran for"
    " 1800077 milliseconds before timing out."
)


def megatron(minute: int) -> str:
    return (
        f"[rank0]: [2026-11-02 09:{minute:02d}:00] iteration {minute * 2:8d}/{100000:8d} | consumed samples:"
        f" {minute * 128:12d} | elapsed time per iteration (ms): 30000.0 | lm loss: 2.345E+00 |"
    )


def nccl_hang(
    tmp_path: Path, *, culprit: int | tuple[int, ...] = 13, state: str = "missing", syslog: dict | None = None
) -> Path:
    """Rank ``culprit`` (or each of them) stops before all_reduce #3106 (``missing``: never enqueues it;
    ``scheduled``: enqueues it but its stream never starts it); the other ranks started it and wait; every watchdog
    fires 30 minutes later; the scheduler cancels the job at its time limit."""
    culprits = culprit if isinstance(culprit, tuple) else (culprit,)
    traces = {}
    for rank in range(16):
        entries = [nccl_entry(seq, "completed", HANG_AT * 10**9 - (3106 - seq) * 10**9) for seq in range(3090, 3106)]
        if rank not in culprits:
            entries.append(nccl_entry(3106, "started", HANG_AT * 10**9 + rank))
        elif state == "scheduled":
            entries.append(nccl_entry(3106, "scheduled", HANG_AT * 10**9 + rank))
        dump = {"version": "2.10", "comm_lib_version": "2.21.5", "pg_config": {"0": {"name": "0", "desc":
                "default_pg", "ranks": str(list(range(16)))}}, "pg_status": {}, "entries": entries}  # fmt: skip
        traces[f"nccl_trace_rank_{rank}"] = pickle.dumps(dump, protocol=2)
    lines = [megatron(minute) for minute in range(0, 40)] + [
        WATCHDOG.format(r=r) for r in range(16) if r not in culprits
    ]
    lines.append("slurmstepd: error: *** JOB 48213 ON node01 CANCELLED AT 2026-11-02T12:00:00 DUE TO TIME LIMIT ***")
    logs = {"slurm-48213.out": lines, **(syslog or {})}
    return make_bundle(
        tmp_path, logs=logs, traces=traces, end="2026-11-02T12:00:00Z", state="TIMEOUT", exit_code="0:15",
        tasks_per_node=4,
    )  # fmt: skip


def test_rank_13_on_its_node_never_entered_all_reduce_3106_and_the_hang_rules_agree(tmp_path):
    result = diagnose_bundle(nccl_hang(tmp_path))
    assert (result["outcome"], result["domain"], result["subdomain"]) == ("attributed", "software", "nccl.straggler")
    root = result["root_cause"]
    assert (root["rule"], root["nodes"], root["time"]) == ("fr.never_entered", ["node04"], "2026-11-02T09:40:00Z")
    assert root["summary"] == (
        "Rank 13 on node04 never entered nccl:all_reduce #3106 (process group 0 (default_pg); 15 ranks waited)"
    )
    roles = {symptom["rule"]: symptom["role"] for symptom in result["symptoms"]}
    # the watchdog timeouts, the stall the hang rule saw and the scheduler's verdict are its cascade
    assert roles["nccl.watchdog_timeout"] == roles["hang.collective"] == roles["slurm.time_limit"] == "cascade"


def test_the_summary_names_every_culprit_and_its_node_as_the_nodes_do(tmp_path):
    result = diagnose_bundle(nccl_hang(tmp_path, culprit=(2, 13)))
    root = result["root_cause"]
    assert (root["rule"], root["nodes"], root["action"]) == ("fr.never_entered", ["node01", "node04"], "INSPECT_NODE")
    assert root["summary"] == (
        "Ranks 2, 13 on node01, node04 never entered nccl:all_reduce #3106 (process group 0 (default_pg); "
        "14 ranks waited)"
    )
    result = diagnose_bundle(nccl_hang(tmp_path / "pair", culprit=(12, 13)))
    assert result["root_cause"]["nodes"] == ["node04"]
    assert result["root_cause"]["summary"].startswith("Ranks 12-13 on node04 never entered nccl:all_reduce #3106")


def test_a_rank_that_enqueued_but_never_started_is_named_too(tmp_path):
    result = diagnose_bundle(nccl_hang(tmp_path, culprit=6, state="scheduled"))
    assert (result["root_cause"]["rule"], result["root_cause"]["nodes"]) == ("fr.never_started", ["node02"])
    assert "Rank 6 on node02 enqueued nccl:all_reduce #3106 but never started it" in result["root_cause"]["summary"]


def test_a_hardware_fault_in_the_culprit_nodes_own_logs_still_wins(tmp_path):
    xid = (
        "Nov  2 09:39:58 node04 kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', name=<unknown>, "
        "GPU has fallen off the bus."
    )
    result = diagnose_bundle(nccl_hang(tmp_path, syslog={"node04/syslog.log": [xid]}))
    assert (result["domain"], result["subdomain"], result["root_cause"]["nodes"]) == ("hardware", "gpu.bus", ["node04"])
    straggler = next(item for item in result["evidence"] if item["rule"] == "fr.never_entered")
    assert straggler["role"] == "cascade"  # explained by the GPU that fell off the bus


# -- the matcher in the rule language -------------------------------------------------------------------------------

MATCHER = """
rules:
  - id: site.straggler
    description: a rank never entered a collective
    flight_recorder: {finding: [never_enqueued, not_started]}
    where: {waited: {gte: 2}, op: {matches: 'all_reduce'}}
    role: cause
    domain: software
    subdomain: nccl.straggler
    summary: 'rank {rank} on {node}: {op} #{seq} in {process_group}'
"""


def test_the_matcher_yields_one_event_per_finding_and_node_with_its_captures(tmp_path):
    engine = Engine(parse_ruleset([("fr.yaml", MATCHER)]))
    result = diagnose_bundle(real_case(tmp_path, "straggler"), engine)
    assert result["root_cause"]["summary"] == "rank 2 on gpu-d: gloo:all_reduce #4 in 0 (default_pg)"
    assert result["root_cause"]["nodes"] == ["gpu-d"]
    fewer = Engine(parse_ruleset([("fr.yaml", MATCHER.replace("gte: 2", "gte: 4"))]))
    assert diagnose_bundle(real_case(tmp_path / "again", "straggler"), fewer)["outcome"] == "unattributed"


@pytest.mark.parametrize(
    ("old", "new", "error"),
    [
        ("not_started]", "late]", "field 'flight_recorder.finding': 'late' is not a finding"),
        ("{finding: [never_enqueued, not_started]}", "[never_enqueued]", "field 'flight_recorder': must be a mapping"),
        ("waited: {gte: 2}", "rank_count: {gte: 2}", "field 'where.rank_count': a flight_recorder finding has no such"),
    ],
)
def test_the_matcher_is_checked_when_loaded(old, new, error):
    with pytest.raises(RuleSetError) as raised:
        parse_ruleset([("fr.yaml", MATCHER.replace(old, new))])
    assert error in str(raised.value)


def test_a_rule_has_one_matcher():
    text = MATCHER.replace("    where:", "    pattern: 'x'\n    streams: [app]\n    where:")
    with pytest.raises(RuleSetError, match="a rule has one matcher, not pattern and flight_recorder"):
        parse_ruleset([("fr.yaml", text)])


def test_the_default_pack_loads_with_the_flight_recorder_rules():
    rules = load_rules(DEFAULT_PACK).by_id()
    assert {"fr.never_entered", "fr.never_started", "fr.no_dump", "fr.collective_mismatch"} <= set(rules)
    assert all(rules[name].sources for name in rules if name.startswith("fr."))


def test_a_thousand_ranks_summarise_in_a_few_lines(tmp_path):
    from engine.flight_recorder.attempt import attempt_dumps

    traces = {}
    for rank in range(1024):
        entries = [nccl_entry(seq, "completed", HANG_AT * 10**9 - 10**9) for seq in range(3100, 3106)]
        if rank != 613:
            entries.append(nccl_entry(3106, "started" if rank % 3 else "completed", HANG_AT * 10**9))
        dump = {"version": "2.10", "pg_config": {"0": {"name": "0", "desc": "default_pg", "ranks": "[]"}},
                "pg_status": {}, "entries": entries}  # fmt: skip
        traces[f"rank_{rank}"] = pickle.dumps(dump, protocol=2)
    bundle = make_bundle(tmp_path, traces=traces, nodes=[f"n{i:03d}" for i in range(128)], tasks_per_node=8,
                         end="2026-11-02T12:00:00Z")  # fmt: skip
    summary = attempt_dumps(load_bundle(bundle)).summary()
    (group,) = summary["groups"]
    assert {state["state"]: state["count"] for state in group["states"]} == {
        "completed": 342, "waited": 681, "never_arrived": 1,
    }  # fmt: skip
    (finding,) = summary["findings"]
    assert finding["nodes"] == [{"node": "n076", "ranks": "613", "count": 1}]
    assert len(json.dumps(summary)) < 8000  # every third rank completed: the widest ranges of all


# -- the torch 2.14.1 cases of several process groups, each bundled with its own torchrun.log and job window ---------


@pytest.mark.parametrize(
    ("case", "missed"),
    [
        ("cross_group", "gloo:all_reduce #4 (process group 6 (dp); 3 ranks waited)"),
        ("four_groups", "gloo:broadcast #4 (process group 7 (pp); 1 rank waited)"),
        ("first_collective", "gloo:all_reduce #1 (process group 1 (late); 2 ranks waited)"),
    ],
)
def test_the_one_rank_that_stalled_is_the_root_cause_whatever_waited_for_it(tmp_path, case, missed):
    made_by = json.loads((DUMPS / case / "MADE_BY.json").read_text())
    culprit, node = made_by["culprit"], RANK_MAP[made_by["culprit"]]
    result = diagnose_bundle(real_case(tmp_path, case))
    root = result["root_cause"]
    assert (result["outcome"], root["rule"], root["nodes"]) == ("attributed", "fr.never_entered", [node])
    assert root["summary"].startswith(f"Rank {culprit} on {node} never entered ")
    assert missed in root["summary"]  # with, in the order they were entered, the others it never entered
    blamed = {item["node"] for item in result["evidence"] if item["source"] == "flight_recorder"}
    assert blamed == {node}  # the ranks that waited elsewhere name no node


def test_a_snapshot_of_a_cancelled_job_leaves_the_cancellation_standing(tmp_path):
    made_by = json.loads((DUMPS / "snapshot" / "MADE_BY.json").read_text())
    result = diagnose_bundle(real_case(tmp_path, "snapshot", state="CANCELLED", exit_code="0:15",
                                       reason="cancelled by its user"))  # fmt: skip
    assert (result["outcome"], result["root_cause"]["rule"]) == ("attributed", "slurm.cancelled")
    assert not any(item["source"] == "flight_recorder" for item in result["evidence"])
    summary = load_bundle_summary(tmp_path / "snapshot")
    assert summary["verdict"] == ""
    [group] = summary["groups"]
    assert group["in_flight"]
    assert group["waited"].endswith("of its 60 s timeout by the dump")
    assert {state["label"] for state in group["states"]} == {"waited in it", "not arrived yet"}
    assert made_by["cancelled_at"] < made_by["ended_at"]


def load_bundle_summary(bundle: Path) -> dict:
    from engine.flight_recorder.attempt import attempt_dumps

    return attempt_dumps(load_bundle(bundle)).summary()


def test_ranks_waiting_for_each_other_in_two_groups_are_the_programs_deadlock(tmp_path):
    # rank 0 entered group 1's all_reduce #1, rank 1 group 2's: each waits for the other; no rank is blamed
    traces = {}
    for rank, group in ((0, "1"), (1, "2")):
        entry = nccl_entry(1, "started", HANG_AT * 10**9) | {"process_group": (group, "undefined"), "pg_id": 1}
        config = {name: {"name": name, "desc": "undefined", "ranks": "[0, 1]"} for name in ("1", "2")}
        dump = {"version": "2.10", "comm_lib_version": "2.21.5", "pg_config": config, "pg_status": {},
                "entries": [entry]}  # fmt: skip
        traces[f"nccl_trace_rank_{rank}"] = pickle.dumps(dump, protocol=2)
    bundle = make_bundle(tmp_path, logs={"train.log": ["start"]}, traces=traces, end="2026-11-02T12:00:00Z",
                         state="TIMEOUT", exit_code="0:15", tasks_per_node=1)  # fmt: skip
    root = diagnose_bundle(bundle)["root_cause"]
    assert (root["rule"], root["nodes"], root["action"]) == ("fr.cross_group_deadlock", [], "FIX_APPLICATION")
    assert root["summary"].startswith("Deadlocked program: ranks 0-1 wait for one another in different process groups")
