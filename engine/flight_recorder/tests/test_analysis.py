"""The hang analysis: on each real Gloo case it names the rank the job's script made misbehave (MADE_BY.json), and
nothing on the healthy run; on dumps written to NCCL's field set it also tells enqueued-but-not-started ranks and
unmatched point-to-point operations. The result does not depend on the order of the files."""

import json
import pickle
import random
from pathlib import Path

import pytest

from engine.flight_recorder import (
    FindingKind,
    RankState,
    analyse,
    format_ranks,
    parse_dump,
    read_dump_dir,
)

DUMPS = Path(__file__).parent / "dumps"


def case(name: str, folder: str = ""):
    made_by = json.loads((DUMPS / name / "MADE_BY.json").read_text())
    return made_by, analyse(read_dump_dir(DUMPS / name / folder), world_size=made_by["ranks"])


def kinds(report) -> list[tuple]:
    return [(f.kind, f.process_group, f.seq, f.ranks) for f in report.findings]


def test_healthy_run_has_nothing_pending():
    _, report = case("healthy")
    assert report.healthy
    assert report.findings == ()
    assert [group.pending for group in report.groups] == [None, None]
    assert report.summary() == (
        "process group 0 (default_pg), 4 ranks: nothing pending\nprocess group 1, 2 ranks: nothing pending"
    )


def test_straggler_is_the_rank_that_never_entered():
    made_by, report = case("straggler")
    culprit = made_by["culprit"]
    assert kinds(report) == [(FindingKind.NEVER_ENQUEUED, "0", 4, (culprit,))]
    finding = report.findings[0]
    assert finding.op == "gloo:all_reduce"
    assert finding.waiting == 3
    assert (
        finding.text
        == f"rank {culprit} never entered gloo:all_reduce #4 (process group 0 (default_pg); 3 ranks waited)"
    )
    default = report.groups[0]
    assert default.waited_on
    assert default.pending.input_sizes == ((4,),)
    assert [(g.state, g.ranks) for g in default.states] == [
        (RankState.ENQUEUED, tuple(r for r in range(4) if r != culprit)),
        (RankState.NEVER_ENQUEUED, (culprit,)),
    ]


def test_dead_rank_is_the_missing_dump():
    made_by, report = case("dead")
    culprit = made_by["culprit"]
    assert made_by["ranks_without_dump"] == [culprit]
    assert kinds(report) == [(FindingKind.MISSING_DUMP, "0", 4, (culprit,))]
    assert report.findings[0].text == (
        f"rank {culprit} left no dump (process group 0 (default_pg); 7 ranks waited on gloo:all_reduce #4)"
    )
    assert report.groups[0].states[-1].state == RankState.NO_DUMP


def test_a_missing_highest_rank_needs_the_world_size():
    dumps = [dump for dump in read_dump_dir(DUMPS / "dead") if dump.rank != 7]
    assert analyse(dumps, world_size=8).findings[0].ranks == (5, 7)
    assert analyse(dumps).findings[0].ranks == (5,)


def test_wrong_op_is_a_mismatch_naming_the_odd_rank():
    made_by, report = case("wrong_op")
    culprit = made_by["culprit"]
    assert kinds(report) == [(FindingKind.MISMATCH, "0", 4, (culprit,))]
    assert report.findings[0].text == (
        f"rank {culprit} called gloo:broadcast #4 where 3 ranks called gloo:all_reduce (process group 0 (default_pg))"
    )


def test_size_mismatch_then_the_odd_rank_stops():
    made_by, report = case("size_mismatch")
    culprit = made_by["culprit"]
    assert kinds(report) == [
        (FindingKind.MISMATCH, "0", 4, (culprit,)),
        (FindingKind.NEVER_ENQUEUED, "0", 5, (culprit,)),
    ]
    assert "input sizes [[8]], output sizes [[8]] where 3 ranks" in report.findings[0].text


def test_dtype_mismatch_and_the_rank_it_crashed():
    made_by, report = case("dtype_mismatch")
    lost = tuple(made_by["ranks_without_dump"])
    assert kinds(report) == [
        (FindingKind.MISMATCH, "0", 4, (made_by["culprit"],)),
        (FindingKind.MISSING_DUMP, "0", 4, lost),
    ]
    assert "input dtypes [Double], output dtypes [Double] where 2 ranks" in report.findings[0].text


@pytest.mark.parametrize("name", ["healthy", "straggler"])
def test_json_and_pickle_give_the_same_report(name):
    assert case(name) == case(name, "json")


@pytest.mark.parametrize("name", ["straggler", "dead", "size_mismatch", "dtype_mismatch"])
def test_the_order_of_the_files_does_not_matter(name):
    dumps = list(read_dump_dir(DUMPS / name))
    expected = analyse(dumps, world_size=8)
    for seed in range(5):
        shuffled = dumps[:]
        random.Random(seed).shuffle(shuffled)
        report = analyse(shuffled, world_size=8)
        assert report == expected
        assert report.summary() == expected.summary()


def test_format_ranks():
    assert format_ranks((8, 7, 0, 1, 2, 3, 5)) == "0-3, 5, 7-8"
    assert format_ranks(()) == ""
    assert format_ranks([4]) == "4"


# Dumps in NCCL's field set (FlightRecorder.hpp, version 2.10), as ProcessGroupNCCL writes them.


def nccl_entry(seq, state="completed", op="all_reduce", sizes=((4,),), dtype="Float", group="0", p2p_seq=0, **extra):
    is_p2p = op.startswith(("send", "recv"))
    return {
        "record_id": seq,
        "pg_id": 0,
        "process_group": (group, "default_pg" if group == "0" else "tp"),
        "collective_seq_id": seq,
        "p2p_seq_id": p2p_seq,
        "op_id": seq,
        "profiling_name": f"nccl:{op}",
        "time_created_ns": 1_700_000_000_000_000_000 + seq,
        "input_sizes": [list(size) for size in sizes],
        "input_dtypes": [dtype] * len(sizes),
        "output_sizes": [list(size) for size in sizes],
        "output_dtypes": [dtype] * len(sizes),
        "state": state,
        "time_discovered_started_ns": None if state == "scheduled" else 1,
        "time_discovered_completed_ns": 2 if state == "completed" else None,
        "retired": state == "completed",
        "timeout_ms": 600_000,
        "is_p2p": is_p2p,
        "thread_id": "1",
        "thread_name": "pt_main_thread",
        **extra,
    }


def nccl_dumps(per_rank: dict[int, list[dict]], groups: dict[str, list[int]] | None = None):
    groups = groups or {"0": sorted(per_rank)}
    config = {name: {"name": name, "desc": "default_pg", "ranks": str(ranks)} for name, ranks in groups.items()}
    return [
        parse_dump(
            pickle.dumps(
                {"version": "2.10", "comm_lib_version": "2.21.5", "pg_config": config, "pg_status": {}, "entries": e}
            ),
            name=f"nccl_trace_rank_{rank}",
            rank=rank,
        )
        for rank, e in per_rank.items()
    ]


def test_nccl_rank_that_enqueued_but_never_started():
    per_rank = {rank: [nccl_entry(1), nccl_entry(2, "started")] for rank in range(4)}
    per_rank[2][1] = nccl_entry(2, "scheduled")
    report = analyse(nccl_dumps(per_rank))
    assert kinds(report) == [(FindingKind.NOT_STARTED, "0", 2, (2,))]
    assert report.findings[0].text == (
        "rank 2 enqueued nccl:all_reduce #2 but never started it (process group 0 (default_pg); 3 ranks started it)"
    )


def test_nccl_collective_in_flight_everywhere_names_no_rank():
    report = analyse(nccl_dumps({rank: [nccl_entry(1), nccl_entry(2, "started")] for rank in range(4)}))
    assert report.findings == ()
    assert report.groups[0].pending.seq == 2
    assert [(g.state, g.ranks) for g in report.groups[0].states] == [(RankState.STARTED, (0, 1, 2, 3))]


def test_nccl_straggler_in_a_subgroup_of_global_ranks():
    per_rank = {
        rank: [nccl_entry(s, "completed" if s < 7 else "started", group="5") for s in range(5, 8)]
        for rank in (4, 5, 6, 7)
    }
    per_rank[6] = per_rank[6][:2]
    report = analyse(nccl_dumps(per_rank, {"5": [4, 5, 6, 7]}), world_size=8)
    assert kinds(report) == [(FindingKind.NEVER_ENQUEUED, "5", 7, (6,))]
    assert report.groups[0].members == (4, 5, 6, 7)


def test_ranks_whose_buffer_no_longer_reaches_back_are_unknown_not_culprits():
    per_rank = {rank: [nccl_entry(s) for s in range(1, 4)] + [nccl_entry(4, "started")] for rank in range(3)}
    per_rank[3] = [nccl_entry(s) for s in range(1, 3)]  # the straggler
    per_rank[1] = [nccl_entry(5, "scheduled", op="broadcast")]  # its ring buffer wrapped
    report = analyse(nccl_dumps(per_rank))
    states = {g.state: g.ranks for g in report.groups[0].states}
    assert report.groups[0].pending.seq == 3
    assert states[RankState.UNKNOWN] == (1,)
    assert kinds(report) == [(FindingKind.NEVER_ENQUEUED, "0", 3, (3,))]


def test_a_tie_names_every_rank():
    per_rank = {rank: [nccl_entry(1, sizes=((4,),) if rank < 2 else ((8,),))] for rank in range(4)}
    report = analyse(nccl_dumps(per_rank))
    assert kinds(report) == [(FindingKind.MISMATCH, "0", 1, (0, 1, 2, 3))]
    assert report.findings[0].text.startswith("process group 0 (default_pg) disagrees at #1: ranks 0-1 called")


def test_uneven_splits_are_no_mismatch():
    per_rank = {rank: [nccl_entry(1, op="all_to_all_single", sizes=((rank + 1, 3),))] for rank in range(4)}
    assert analyse(nccl_dumps(per_rank)).healthy


def test_an_unmatched_send_names_the_peer_that_never_posted_the_receive():
    per_rank = {rank: [nccl_entry(1)] for rank in range(4)}
    per_rank[0].append(nccl_entry(1, "started", op="send 0->1", p2p_seq=1))
    per_rank[2].append(nccl_entry(1, "completed", op="send 2->3", p2p_seq=1))
    per_rank[3].append(nccl_entry(1, "completed", op="recv 3<-2", p2p_seq=1))
    report = analyse(nccl_dumps(per_rank))
    assert [(f.kind, f.p2p, f.seq, f.ranks) for f in report.findings] == [(FindingKind.NEVER_ENQUEUED, True, 1, (1,))]
    assert report.findings[0].text == (
        "rank 1 never posted the recv matching rank 0's nccl:send 0->1 (p2p #1 of rank 0, process group 0 (default_pg))"
    )
    per_rank[1].append(nccl_entry(1, "started", op="recv 1<-0", p2p_seq=1))
    assert analyse(nccl_dumps(per_rank)).findings == ()


def test_p2p_is_placed_only_in_a_group_whose_members_are_known():
    per_rank = {rank: [nccl_entry(1, group="7")] for rank in (2, 3, 5)}
    per_rank[2].append(nccl_entry(1, "started", op="send 0->1", group="7", p2p_seq=1))
    assert [f for f in analyse(nccl_dumps(per_rank, {"0": [2, 3, 5]})).findings if f.p2p] == []
    report = analyse(nccl_dumps(per_rank, {"7": [2, 3, 5]}))
    assert [(f.kind, f.p2p, f.ranks) for f in report.findings] == [(FindingKind.NEVER_ENQUEUED, True, (3,))]


def test_a_thousand_ranks_fit_on_a_page():
    per_rank = {rank: [nccl_entry(s) for s in range(1, 3)] + [nccl_entry(3, "started")] for rank in range(1024)}
    for straggler in (13, 200, 201):
        per_rank[straggler] = per_rank[straggler][:2]
    del per_rank[700]
    report = analyse(nccl_dumps(per_rank, {"0": list(range(1024))}))
    assert report.summary().splitlines() == [
        "process group 0 (default_pg), 1024 ranks: waits on nccl:all_reduce #3",
        "  started: 0-12, 14-199, 202-699, 701-1023",
        "  never_enqueued: 13, 200-201",
        "  no_dump: 700",
        "ranks 13, 200-201 never entered nccl:all_reduce #3 (process group 0 (default_pg); 1,020 ranks waited)",
        "rank 700 left no dump (process group 0 (default_pg); 1,020 ranks waited on nccl:all_reduce #3)",
    ]
