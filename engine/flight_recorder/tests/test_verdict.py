"""The root cause's line: every blamed rank with its nodes, from the same findings that place the events."""

from engine.flight_recorder import Finding, FindingKind
from engine.flight_recorder.verdict import verdict

NODES = {2: "gpu-a", 6: "gpu-d", 7: "gpu-d", 9: None}


def finding(kind, ranks, seq=4, group="0", waiting=3, op="nccl:all_reduce") -> Finding:
    return Finding(kind, group, "default_pg" if group == "0" else "dp", seq, op, ranks, waiting, False, "")


def line(*findings) -> str:
    return verdict(tuple(findings), NODES.get, lambda f: f.seq)


def test_one_rank_and_a_range_of_ranks_read_in_the_singular_and_the_plural():
    assert line(finding(FindingKind.NEVER_ENQUEUED, (2,))) == (
        "Rank 2 on gpu-a never entered nccl:all_reduce #4 (process group 0 (default_pg); 3 ranks waited)"
    )
    assert line(finding(FindingKind.NEVER_ENQUEUED, (6, 7), waiting=1)) == (
        "Ranks 6-7 on gpu-d never entered nccl:all_reduce #4 (process group 0 (default_pg); 1 rank waited)"
    )


def test_every_blamed_rank_is_named_with_its_node_in_the_order_the_collectives_were_entered():
    assert line(
        finding(FindingKind.MISSING_DUMP, (6, 7), seq=5, waiting=6),
        finding(FindingKind.NEVER_ENQUEUED, (2,), seq=3, group="4"),
        finding(FindingKind.NEVER_ENQUEUED, (2,), seq=4),
    ) == (
        "Rank 2 on gpu-a never entered nccl:all_reduce #3 (process group 4 (dp); 3 ranks waited) and "
        "nccl:all_reduce #4 (process group 0 (default_pg); 3 ranks waited); ranks 6-7 on gpu-d left no dump while "
        "6 ranks waited in nccl:all_reduce #5 (process group 0 (default_pg))"
    )


def test_unplaced_ranks_and_nothing_blamed():
    assert line(finding(FindingKind.NOT_STARTED, (9,))).startswith(
        "Rank 9 (not placed on a node) enqueued nccl:all_reduce #4 but never started it"
    )
    assert line(finding(FindingKind.NEVER_ENQUEUED, (2, 9))).startswith(
        "Ranks 2, 9 on gpu-a and a node the rank map does not name never entered"
    )
    assert line() == ""
