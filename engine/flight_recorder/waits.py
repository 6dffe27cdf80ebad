"""The wait-for graph across process groups: which absent ranks another group's hang explains.

A rank missing from a hung collective of group A (never entered it, or, on NCCL, enqueued it but never started it) is
*held* when it waits, itself, in a hung collective of another group B: it cannot reach A's collective before B's
completes, so its absence from A is B's doing, and B's own absent ranks are where to look. Following these edges
from every absent rank ends at

* a rank absent without being held anywhere (stuck in its own code, dead, or never reaching any collective): the
  only ranks blamed;
* a rank that left no dump (blamed as such: nothing tells where it was);
* a hung collective every member entered (started everywhere, completed nowhere): a hang that names no rank; or
* a cycle: ranks waiting for each other in different groups, each having entered its collective in another order
  (a deadlock of the program, blamed on the program, not on a rank).

Only hung collectives count: one waited on for less than its timeout by the time of the dump (`in_flight`) holds no
rank and blames none.
"""

from __future__ import annotations

from dataclasses import dataclass

from engine.flight_recorder.findings import GroupReport, RankState

ABSENT = (RankState.NEVER_ENQUEUED, RankState.SCHEDULED)


@dataclass(frozen=True, slots=True)
class Waits:
    held: dict[tuple[str, int], tuple[str, ...]]  # (group, absent rank) -> the groups whose hang holds it
    deadlocked: tuple[int, ...]  # held ranks whose waits lead only back to one another


def hung(group: GroupReport) -> bool:
    return group.pending is not None and group.waited_on and not group.in_flight


def absent(group: GroupReport) -> tuple[int, ...]:
    """The members missing from the group's collective: never entered, or (where others started it) not started."""
    states = {rank_group.state: rank_group.ranks for rank_group in group.states}
    moved = states.get(RankState.STARTED, ()) or states.get(RankState.COMPLETED, ())
    ranks = list(states.get(RankState.NEVER_ENQUEUED, ()))
    if moved:
        ranks.extend(states.get(RankState.SCHEDULED, ()))
    return tuple(sorted(ranks))


def wait_for(groups: tuple[GroupReport, ...] | list[GroupReport]) -> Waits:
    hung_groups = [group for group in groups if hung(group)]
    missing = {group.process_group: absent(group) for group in hung_groups}
    waiting_in: dict[int, list[str]] = {}  # rank -> hung groups it waits in, not as one of the absent
    lost_in: dict[str, bool] = {}
    for group in hung_groups:
        lost_in[group.process_group] = any(g.state == RankState.NO_DUMP for g in group.states)
        for rank_group in group.states:
            if rank_group.state in (RankState.STARTED, RankState.ENQUEUED, RankState.SCHEDULED):
                for rank in rank_group.ranks:
                    if rank not in missing[group.process_group]:
                        waiting_in.setdefault(rank, []).append(group.process_group)
    held = {}
    for name, ranks in missing.items():
        for rank in ranks:
            elsewhere = tuple(other for other in waiting_in.get(rank, ()) if other != name)
            if elsewhere:
                held[(name, rank)] = elsewhere

    rooted: dict[int, bool] = {}

    def leads_out(rank: int, path: set[int]) -> bool:
        """Whether following the groups that hold `rank` reaches a blamed rank, a lost one or a hang naming none."""
        if rank in rooted:
            return rooted[rank]
        if rank in path:
            return False
        path.add(rank)
        result = False
        for name in waiting_in.get(rank, ()):
            if not missing[name] or lost_in[name]:
                result = True
            for other in missing[name]:
                if (name, other) not in held or leads_out(other, path):
                    result = True
            if result:
                break
        path.discard(rank)
        if result or not path:  # a negative answer is final only from the walk's start
            rooted[rank] = result
        return result

    deadlocked = sorted({rank for (_, rank) in held if not leads_out(rank, set())})
    return Waits(held, tuple(deadlocked))
