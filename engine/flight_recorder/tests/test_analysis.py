"""The hang analysis: on each real Gloo case it names the rank the job's script made misbehave (MADE_BY.json), and
nothing on the healthy run; on dumps written to NCCL's field set it also tells enqueued-but-not-started ranks and
unmatched point-to-point operations. The result does not depend on the order of the files."""

import json
import pickle
import random
from dataclasses import replace
from datetime import UTC, datetime
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


# The torch 2.14.1 cases of several process groups (contrib/flight_recorder/make_dumps.py), analysed as the engine does:
# the dumps were written by the attempt's end (MADE_BY.json's ended_at, when torchrun exited).


def group_case(name: str, *, timed: bool = True):
    made_by = json.loads((DUMPS / name / "MADE_BY.json").read_text())
    ended = datetime.fromisoformat(made_by["ended_at"]).timestamp() if timed else None
    return made_by, analyse(read_dump_dir(DUMPS / name), world_size=made_by["ranks"], dumped_by=ended)


def states(report, group: str) -> dict:
    return {g.state: g.ranks for g in next(r for r in report.groups if r.process_group == group).states}


def test_ranks_held_in_another_groups_collective_are_not_blamed():
    made_by, report = group_case("cross_group")
    culprit = made_by["culprit"]  # sleeps before its data-parallel all_reduce #4
    assert kinds(report) == [
        (FindingKind.NEVER_ENQUEUED, "0", 4, (culprit,)),
        (FindingKind.NEVER_ENQUEUED, "6", 4, (5,)),
    ]
    # ranks 1, 3, 7 never reached the default group's #4: they wait for rank 5 in the odd ranks' data group
    assert states(report, "0") == {
        RankState.ENQUEUED: (0, 2, 4, 6),
        RankState.NEVER_ENQUEUED: (culprit,),
        RankState.HELD: (1, 3, 7),
    }
    assert report.findings[0].text == (
        "rank 5 never entered gloo:all_reduce #4 (process group 0 (default_pg); 4 ranks waited; ranks 1, 3, 7 "
        "waited in other groups' hung collectives)"
    )
    assert {finding.ranks for finding in report.culprits} == {(culprit,)}


def test_four_groups_blame_the_rank_that_stalled_in_the_pipeline_group():
    made_by, report = group_case("four_groups")
    culprit = made_by["culprit"]  # a second-stage rank: sleeps before the pipeline broadcast of step 4
    assert {finding.ranks for finding in report.findings} == {(culprit,)}
    assert [(f.process_group, f.pg_desc, f.op) for f in report.findings] == [
        ("0", "default_pg", "gloo:all_reduce"),
        ("7", "pp", "gloo:broadcast"),
        ("11", "dp", "gloo:all_reduce"),
    ]
    # rank 2 (the broadcast's root) waits for rank 6 in the pipeline group, so rank 0 waits for rank 2 in their data
    # group; neither is blamed, in the data group nor in the default group
    assert states(report, "9") == {RankState.ENQUEUED: (0,), RankState.HELD: (2,)}
    assert states(report, "0")[RankState.HELD] == (0, 2, 4)


def test_a_member_that_never_reached_a_new_groups_first_collective_is_found_from_the_records():
    made_by, report = group_case("first_collective")
    culprit = made_by["culprit"]
    late = next(group for group in report.groups if group.pg_desc == "late")
    assert (late.members, late.membership) == ((1, 2, 3), "inferred")
    assert kinds(report) == [(FindingKind.NEVER_ENQUEUED, "1", 1, (culprit,))]
    assert report.findings[0].text == (
        "rank 3 never entered gloo:all_reduce #1 (process group 1 (late); 2 ranks waited)"
    )


def test_without_gloos_record_of_the_last_group_its_unseen_member_stays_unseen():
    dumps = [replace(dump, unnamed_ranks=None) for dump in read_dump_dir(DUMPS / "first_collective")]
    report = analyse(dumps, world_size=4)
    late = next(group for group in report.groups if group.pg_desc == "late")
    assert (late.members, late.membership) == ((1, 2), "entries")
    assert report.findings == ()


def test_a_record_of_another_size_rules_a_rank_out():
    # torch 2.14 records the last group a rank created as group-local ranks: rank 0 (not a member) the world's 4,
    # rank 3 the new group's 3. Were rank 0's 3 as well, two ranks could be the missing member: none is named.
    dumps = [
        replace(dump, unnamed_ranks=(0, 1, 2)) if dump.rank == 0 else dump
        for dump in read_dump_dir(DUMPS / "first_collective")
    ]
    assert next(g for g in analyse(dumps, world_size=4).groups if g.pg_desc == "late").membership == "entries"


def test_a_snapshot_of_collectives_in_flight_is_no_hang():
    _, report = group_case("snapshot")
    default = report.groups[0]
    # rank 1 computes longest: when the job was cancelled the others had just entered all_reduce #N
    assert default.in_flight
    assert default.waited_on
    assert default.timeout_s == 60
    assert default.waited_s < 60
    assert states(report, "0")[RankState.NEVER_ENQUEUED] == (1,)
    assert report.findings == ()
    assert report.culprits == ()
    assert "in flight gloo:all_reduce" in report.summary().splitlines()[0]
    # without the time of the dump the same snapshot reads as a straggler
    _, untimed = group_case("snapshot", timed=False)
    assert [finding.ranks for finding in untimed.findings] == [(1,)]


def test_a_bound_older_than_what_the_dumps_recorded_is_not_used():
    # the dumps of 2026-12-03 against an attempt that ended a month before: the clocks disagree, the time tells nothing
    dumps = read_dump_dir(DUMPS / "straggler")
    report = analyse(dumps, world_size=4, dumped_by=datetime(2026, 11, 2, tzinfo=UTC).timestamp())
    assert kinds(report) == [(FindingKind.NEVER_ENQUEUED, "0", 4, (2,))]
    assert report.groups[0].waited_s is None


def test_the_earlier_cases_read_the_same_with_the_time_of_their_dumps():
    for name in ("straggler", "dead", "size_mismatch", "dtype_mismatch", "wrong_op", "healthy"):
        made_by = json.loads((DUMPS / name / "MADE_BY.json").read_text())
        dumps = read_dump_dir(DUMPS / name)
        later = datetime(2026, 12, 3, 12, 55, tzinfo=UTC).timestamp()  # their torchrun.log's day, after the run
        assert kinds(analyse(dumps, world_size=made_by["ranks"], dumped_by=later)) == kinds(
            analyse(dumps, world_size=made_by["ranks"])
        )


@pytest.mark.parametrize("name", ["cross_group", "first_collective", "snapshot", "four_groups"])
def test_the_group_cases_do_not_depend_on_the_order_of_the_files(name):
    made_by, expected = group_case(name)
    dumps = list(read_dump_dir(DUMPS / name))
    random.Random(7).shuffle(dumps)
    ended = datetime.fromisoformat(made_by["ended_at"]).timestamp()
    assert analyse(dumps, world_size=made_by["ranks"], dumped_by=ended) == expected


def test_ranks_that_wait_for_each_other_in_two_groups_are_a_deadlock():
    # rank 0 entered group 1's #1 and waits there for rank 1; rank 1 entered group 2's #1 and waits there for rank 0
    per_rank = {
        0: [nccl_entry(1, "started", group="1")],
        1: [nccl_entry(1, "started", group="2")],
    }
    report = analyse(nccl_dumps(per_rank, {"1": [0, 1], "2": [0, 1]}))
    assert kinds(report) == [(FindingKind.DEADLOCK, "1", None, (0, 1))]
    assert report.findings[0].text.startswith("ranks 0-1 wait for one another in different process groups (rank 0 in")
    assert report.culprits == ()


def test_a_rank_held_by_a_group_that_waits_on_a_lost_rank_is_not_blamed():
    # ranks 0-1 wait in group 1 for rank 2, which left no dump; rank 1 therefore never reached the default #2
    per_rank = {
        0: [nccl_entry(1), nccl_entry(2, "started"), nccl_entry(1, "started", group="1")],
        1: [nccl_entry(1), nccl_entry(1, "started", group="1")],
        3: [nccl_entry(1), nccl_entry(2, "started")],
    }
    report = analyse(nccl_dumps(per_rank, {"0": [0, 1, 2, 3], "1": [0, 1, 2]}))
    assert [(f.kind, f.process_group, f.ranks) for f in report.findings] == [
        (FindingKind.MISSING_DUMP, "0", (2,)),
        (FindingKind.MISSING_DUMP, "1", (2,)),
    ]
    assert states(report, "0")[RankState.HELD] == (1,)


def test_an_all_gathers_outputs_give_its_groups_size():
    # group 5's members seen are 4 and 6, its all_gather has 3 outputs: the third member is the rank whose record
    # allows it (rank 7's; ranks 0-3 and 5 record the default group's 8 ranks)
    sizes = ((4,), (4,), (4,))
    per_rank = {rank: [nccl_entry(1)] for rank in range(8)}
    for rank in (4, 6):
        per_rank[rank].append(
            nccl_entry(1, "started", op="all_gather", group="5")
            | {"input_sizes": [[4]], "output_sizes": [list(size) for size in sizes], "output_dtypes": ["Float"] * 3}
        )
    dumps = [
        replace(dump, unnamed_ranks=(0, 1, 2) if dump.rank == 7 else tuple(range(8)))
        for dump in nccl_dumps(per_rank, {"0": list(range(8))})
    ]
    report = analyse(dumps)
    group = next(g for g in report.groups if g.process_group == "5")
    assert (group.members, group.membership) == ((4, 6, 7), "inferred")
    assert [(f.process_group, f.ranks) for f in report.findings] == [("5", (7,))]


def test_an_unmatched_send_still_in_its_timeout_names_no_peer():
    per_rank = {rank: [nccl_entry(1)] for rank in range(2)}
    per_rank[0].append(nccl_entry(1, "started", op="send 0->1", p2p_seq=1))
    created = per_rank[0][-1]["time_created_ns"] / 1e9
    assert analyse(nccl_dumps(per_rank), dumped_by=created + 10).findings == ()  # 10 s of 600
    assert [f.ranks for f in analyse(nccl_dumps(per_rank), dumped_by=created + 601).findings] == [(1,)]
