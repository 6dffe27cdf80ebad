"""Which rank stopped: the collective each process group waits on, and who never arrived, from per-rank dumps.

For each process group (told apart by name, which every rank shares):

* the members, from what the dumps record (engine.flight_recorder.membership): the group's `pg_config` ranks, the
  world for the default group, Gloo's record of each rank's last created group and the sizes a collective expects,
  else the ranks whose dumps hold entries of the group;
* the collective the ranks wait on: the lowest collective sequence number not completed by every member that left a
  dump, where a rank that never enqueued it has not completed it. An entry counts as done when its state is
  `completed`; for a backend that records no start or completion (every entry `scheduled`, Gloo's case) when it is
  retired. When every such collective is done but members left no dump, the group's last collective stands in,
  flagged as not known to be waited on;
* how long its members had waited in it by the time of the dump (bounded by `dumped_by`, the attempt's end), against
  its timeout: a collective every member had waited in for less than its timeout is in flight, a snapshot of a
  healthy job, and no evidence of a hang;
* `mismatch` at every sequence number that two or more ranks hold: a different op, or different input/output sizes or
  dtypes where the op requires them equal (a desynchronised program). The ranks named are those apart from a strict
  majority; without one, every rank at that sequence number;
* for point-to-point operations (recorded by NCCL, not by Gloo) in a group whose members are known, a send or receive
  not completed (past its timeout) whose peer's dump holds all of its point-to-point operations of the group and has
  no matching one: `never_enqueued` for the peer.

Then across groups (engine.flight_recorder.waits), at every hung collective: a rank missing from it because it waits
in another group's hung collective is `held`, not blamed; the findings name the others: `never_enqueued` (ranks
whose dump reaches back to it but does not hold it: the straggler, the stuck or dead rank), `not_started` (ranks that
enqueued it while others started it, only where the backend records starts), `missing_dump` (members that left no
dump); ranks held only by one another are a `deadlock`.

Everything is sorted; nothing depends on the order of files, entries, dicts or sets.
"""

from collections import Counter

from engine.flight_recorder.dumps import Dump, Entry, GroupConfig
from engine.flight_recorder.findings import (
    WAITED,
    Collective,
    Finding,
    FindingKind,
    GroupReport,
    RankGroup,
    RankState,
    Report,
    count_label,
    group_label,
    ranks_label,
)
from engine.flight_recorder.membership import Membership, memberships
from engine.flight_recorder.waits import Waits, wait_for

_KIND_ORDER = {kind: index for index, kind in enumerate(FindingKind)}

# Ops whose inputs or outputs legitimately differ between ranks (uneven splits, the root of gather or scatter).
_UNEVEN_INPUTS = frozenset(
    {"all_to_all", "all_to_all_single", "all_to_all_v_single", "alltoall", "alltoall_base", "scatter"}
    | {"all_gather_v", "coalesced"}
)
_UNEVEN_OUTPUTS = frozenset(
    {"all_to_all", "all_to_all_single", "all_to_all_v_single", "alltoall", "alltoall_base", "gather"}
    | {"reduce_scatter_v", "coalesced"}
)
_FIELDS = ("input_sizes", "input_dtypes", "output_sizes", "output_dtypes")


def analyse(
    dumps: tuple[Dump, ...] | list[Dump],
    *,
    world_size: int | None = None,
    unreadable: frozenset[int] = frozenset(),
    dumped_by: float | None = None,
) -> Report:
    """The report of a set of per-rank dumps. `world_size` (the job's) reveals missing dumps of the highest ranks;
    `unreadable` ranks left a dump that could not be read: they are unknown, not lost. `dumped_by` (unix seconds,
    the attempt's end) bounds when the dumps were written: a collective that every member had waited in for less
    than its timeout by then was in flight, not hung, and names no culprit. A bound earlier than an operation the
    dumps recorded is not one (the clocks disagree): it is then left unused."""
    by_rank = {dump.rank: dump for dump in dumps}
    if len(by_rank) != len(dumps):
        raise ValueError("two dumps of the same rank")
    if dumped_by is not None and _latest(dumps) > dumped_by:
        dumped_by = None  # an operation recorded after the bound: the clocks disagree, and the bound tells nothing
    world = max([world_size or 0, *(rank + 1 for rank in [*by_rank, *unreadable])])
    entries: dict[str, dict[int, list[Entry]]] = {}
    descs: dict[str, str] = {}
    for rank in sorted(by_rank):
        for entry in by_rank[rank].entries:
            entries.setdefault(entry.process_group, {}).setdefault(rank, []).append(entry)
            descs.setdefault(entry.process_group, entry.pg_desc)
    configs = _configs(by_rank)
    members = memberships(by_rank, entries, descs, configs, world)
    groups, findings = [], []
    for name in sorted(members, key=_natural):
        desc = descs.get(name) or (configs[name].desc if name in configs else "")
        report, group_findings = _analyse_group(
            name, desc, members[name], entries.get(name, {}), by_rank, unreadable, dumped_by
        )
        groups.append(report)
        findings.extend(group_findings)
    waits = wait_for(groups)
    groups = [_with_held(group, waits) for group in groups]
    for group in groups:
        findings.extend(_culprit_findings(group, waits))
    if waits.deadlocked:
        findings.append(_deadlock(groups, waits))
    findings.sort(
        key=lambda f: (_natural(f.process_group), f.p2p, -1 if f.seq is None else f.seq, _KIND_ORDER[f.kind], f.ranks)
    )
    return Report(tuple(sorted(by_rank)), world, tuple(groups), tuple(findings))


def _latest(dumps) -> float:
    """The latest time any dump recorded (unix seconds): none was written before it."""
    times = [
        time
        for dump in dumps
        for entry in dump.entries
        for time in (entry.time_created_ns, entry.time_discovered_started_ns, entry.time_discovered_completed_ns)
        if time
    ]
    return max(times, default=0) / 1e9


def _natural(name: str) -> tuple:
    return (0, int(name), "") if name.isdigit() else (1, 0, name)


def _configs(by_rank: dict[int, Dump]) -> dict[str, GroupConfig]:
    """The first non-empty config of each group, in rank order."""
    configs: dict[str, GroupConfig] = {}
    for rank in sorted(by_rank):
        for config in by_rank[rank].groups:
            if config.ranks and config.name not in configs:
                configs[config.name] = config
    return configs


def _done(entry: Entry, tracks_state: bool) -> bool:
    return entry.state == "completed" if tracks_state else entry.retired is not False


def _analyse_group(
    name, desc, membership: Membership, group_entries, by_rank, unreadable, dumped_by
) -> tuple[GroupReport, list[Finding]]:
    """The group's pending collective and where each member stands there, with the findings that need no other
    group: mismatches, unmatched p2p, and the dumps missing where nothing hung (the culprits come after the
    wait-for graph, `_culprit_findings`)."""
    members = membership.ranks
    collectives = {
        rank: {entry.collective_seq_id: entry for entry in rank_entries if not entry.is_p2p}
        for rank, rank_entries in group_entries.items()
    }
    tracks_state = any(entry.state != "scheduled" for rank_entries in group_entries.values() for entry in rank_entries)
    dumped = [rank for rank in members if rank in by_rank]
    lost = tuple(rank for rank in members if rank not in by_rank and rank not in unreadable)
    # The first sequence number each rank has not done (never enqueued counts as not done).
    frontier = {}
    for rank in dumped:
        seqs = collectives.get(rank, {})
        if not seqs and not by_rank[rank].entries:
            continue  # an empty dump tells nothing
        undone = [seq for seq, entry in seqs.items() if not _done(entry, tracks_state)]
        frontier[rank] = min(undone) if undone else max(seqs, default=0) + 1
    highest = max((max(seqs) for seqs in collectives.values() if seqs), default=0)
    pending_seq = min(frontier.values(), default=highest + 1)
    waited_on = pending_seq <= highest
    if not waited_on:
        pending_seq = highest if lost and highest else None
    findings = _mismatches(name, desc, collectives)
    if membership.known:  # p2p names group-local ranks: without the membership they cannot be placed
        findings.extend(_p2p_findings(name, desc, members, group_entries, by_rank, tracks_state, dumped_by))
    if pending_seq is None:
        if lost:
            findings.append(_missing(name, desc, lost, None, None, 0, waited_on))
        return GroupReport(name, desc, members, membership.source, None, False, ()), findings

    if not any(pending_seq in seqs for seqs in collectives.values()):  # overwritten everywhere: the next one held
        pending_seq = min(seq for seqs in collectives.values() for seq in seqs if seq > pending_seq)
    at_seq = {rank: seqs[pending_seq] for rank, seqs in collectives.items() if pending_seq in seqs}
    pending = _majority_collective(name, desc, pending_seq, at_seq)
    by_state: dict[RankState, list[int]] = {}
    for rank in members:
        state = _state(rank, pending_seq, collectives, by_rank, at_seq, tracks_state, unreadable)
        by_state.setdefault(state, []).append(rank)
    states = tuple(RankGroup(state, tuple(by_state[state])) for state in RankState if state in by_state)
    waiters = [at_seq[rank] for state in WAITED for rank in by_state.get(state, ()) if rank in at_seq]
    waited_s, timeout_s, in_flight = _waited(waiters, dumped_by)
    report = GroupReport(
        name, desc, members, membership.source, pending, waited_on, states, waited_s, timeout_s, in_flight and waited_on
    )
    if report.in_flight and lost:
        findings.append(_missing(name, desc, lost, None, None, 0, False))
    return report, findings


def _waited(waiters: list[Entry], dumped_by: float | None) -> tuple[float | None, float | None, bool]:
    """The longest wait among `waiters` by `dumped_by`, its timeout, and whether every one of them had waited less
    than its own timeout (in flight). Unknown times or timeouts are taken for a hang."""
    if dumped_by is None or not waiters:
        return None, None, False
    waits = [(dumped_by - entry.time_created_ns / 1e9, entry.timeout_ms) for entry in waiters]
    longest = max(waits, key=lambda wait: wait[0])
    in_flight = all(timeout is not None and waited * 1000 < timeout for waited, timeout in waits)
    timeout_s = None if longest[1] is None else longest[1] / 1000
    return max(longest[0], 0.0), timeout_s, in_flight


def _with_held(group: GroupReport, waits: Waits) -> GroupReport:
    """The group with its absent ranks that another group's hang holds moved to RankState.HELD."""
    held = {rank for (name, rank) in waits.held if name == group.process_group}
    if not held:
        return group
    by_state: dict[RankState, list[int]] = {}
    for rank_group in group.states:
        for rank in rank_group.ranks:
            by_state.setdefault(RankState.HELD if rank in held else rank_group.state, []).append(rank)
    states = tuple(RankGroup(state, tuple(sorted(by_state[state]))) for state in RankState if state in by_state)
    return GroupReport(
        group.process_group, group.pg_desc, group.members, group.membership, group.pending, group.waited_on, states,
        group.waited_s, group.timeout_s, group.in_flight,
    )  # fmt: skip


def _culprit_findings(group: GroupReport, waits: Waits) -> list[Finding]:
    """At a hung collective: the ranks that never entered it (or never started it) and nothing else holds, and the
    members that left no dump."""
    if group.pending is None or group.in_flight:
        return []
    name, desc, pending = group.process_group, group.pg_desc, group.pending
    by_state = {rank_group.state: rank_group.ranks for rank_group in group.states}
    waiting = sum(len(by_state.get(state, ())) for state in WAITED)
    label, where = _collective_label(pending), group_label(name, desc)
    held = by_state.get(RankState.HELD, ())
    elsewhere = f"; {ranks_label(held)} waited in other groups' hung collectives" if held else ""
    findings = []
    if by_state.get(RankState.NEVER_ENQUEUED):
        ranks = by_state[RankState.NEVER_ENQUEUED]
        text = f"{ranks_label(ranks)} never entered {label} (process group {where}; {count_label(waiting)} waited"
        findings.append(
            Finding(FindingKind.NEVER_ENQUEUED, name, desc, pending.seq, pending.op, ranks, waiting, False,
                    text + elsewhere + ")")
        )  # fmt: skip
    moved = len(by_state.get(RankState.STARTED, ())) + len(by_state.get(RankState.COMPLETED, ()))
    if by_state.get(RankState.SCHEDULED) and moved:
        ranks = by_state[RankState.SCHEDULED]
        text = (
            f"{ranks_label(ranks)} enqueued {label} but never started it "
            f"(process group {where}; {count_label(moved)} started it{elsewhere})"
        )
        findings.append(
            Finding(FindingKind.NOT_STARTED, name, desc, pending.seq, pending.op, ranks, waiting, False, text)
        )
    lost = by_state.get(RankState.NO_DUMP)
    if lost:
        findings.append(_missing(name, desc, lost, pending, label, waiting, group.waited_on))
    return findings


def _deadlock(groups: list[GroupReport], waits: Waits) -> Finding:
    """Ranks that wait for one another in different groups: each entered its groups' collectives in another order."""
    by_name = {group.process_group: group for group in groups}
    where: dict[int, str] = {}
    for (_, rank), holders in sorted(waits.held.items(), key=lambda item: (item[0][1], _natural(item[0][0]))):
        if rank in waits.deadlocked and rank not in where:
            group = by_name[holders[0]]
            where[rank] = f"rank {rank} in {_collective_label(group.pending)} of process group " + group_label(
                group.process_group, group.pg_desc
            )
    ranks = waits.deadlocked
    first = by_name[min((waits.held[key][0] for key in waits.held if key[1] in ranks), key=_natural)]
    shown = ", ".join(where[rank] for rank in ranks[:4]) + (f" and {len(ranks) - 4} more" if len(ranks) > 4 else "")
    text = (
        f"{ranks_label(ranks)} wait for one another in different process groups ({shown}): their collectives were "
        "entered in a different order on different ranks"
    )
    return Finding(FindingKind.DEADLOCK, first.process_group, first.pg_desc, None, None, ranks, 0, False, text)


def _state(rank, seq, collectives, by_rank, at_seq, tracks_state, unreadable) -> RankState:
    if rank not in by_rank:
        return RankState.UNKNOWN if rank in unreadable else RankState.NO_DUMP
    entry = at_seq.get(rank)
    if entry is not None:
        if not tracks_state:
            return RankState.ENQUEUED
        return {"completed": RankState.COMPLETED, "started": RankState.STARTED}.get(entry.state, RankState.SCHEDULED)
    seqs = collectives.get(rank, {})
    if not seqs and not by_rank[rank].entries:
        return RankState.UNKNOWN
    if seqs and seq < min(seqs):
        return RankState.UNKNOWN  # overwritten in its ring buffer
    return RankState.NEVER_ENQUEUED


def _missing(name, desc, lost, pending, label, waiting, waited_on) -> Finding:
    text = f"{ranks_label(lost)} left no dump (process group {group_label(name, desc)}"
    if pending is not None:
        verb = "waited on" if waited_on else "last entered"
        text += f"; {count_label(waiting)} {verb} {label}"
    seq, op = (pending.seq, pending.op) if pending is not None else (None, None)
    return Finding(FindingKind.MISSING_DUMP, name, desc, seq, op, lost, waiting, False, text + ")")


def _signature(entry: Entry) -> tuple:
    return (entry.profiling_name, entry.input_sizes, entry.input_dtypes, entry.output_sizes, entry.output_dtypes)


def _majority_collective(name, desc, seq, at_seq: dict[int, Entry]) -> Collective:
    counts = Counter(_signature(entry) for entry in at_seq.values())
    signature = min(counts, key=lambda sig: (-counts[sig], min(r for r, e in at_seq.items() if _signature(e) == sig)))
    return Collective(name, desc, seq, signature[0], False, *signature[1:])


def _op(profiling_name: str) -> str:
    return profiling_name.split(":", 1)[-1].split(" ", 1)[0]


def _mismatches(name, desc, collectives: dict[int, dict[int, Entry]]) -> list[Finding]:
    by_seq: dict[int, dict[int, Entry]] = {}
    for rank in sorted(collectives):
        for seq, entry in collectives[rank].items():
            by_seq.setdefault(seq, {})[rank] = entry
    findings = []
    for seq in sorted(by_seq):
        at_seq = by_seq[seq]
        if len(at_seq) < 2:
            continue
        first = next(iter(at_seq.values()))
        if all(_signature(entry) == _signature(first) for entry in at_seq.values()):
            continue
        if len({entry.profiling_name for entry in at_seq.values()}) > 1:
            fields = ("profiling_name",)
        else:
            op = _op(first.profiling_name)
            compared = [
                field
                for field in _FIELDS
                if not (field.startswith("input") and op in _UNEVEN_INPUTS)
                and not (field.startswith("output") and op in _UNEVEN_OUTPUTS)
            ]
            fields = tuple(field for field in compared if len({getattr(entry, field) for entry in at_seq.values()}) > 1)
            if not fields:
                continue
        findings.append(_mismatch(name, desc, seq, at_seq, fields))
    return findings


def _mismatch(name, desc, seq, at_seq: dict[int, Entry], fields: tuple[str, ...]) -> Finding:
    variants: dict[tuple, list[int]] = {}
    for rank in sorted(at_seq):
        variants.setdefault(tuple(getattr(at_seq[rank], field) for field in fields), []).append(rank)
    ordered = sorted(variants.items(), key=lambda item: (-len(item[1]), item[1][0]))
    where = group_label(name, desc)
    op = at_seq[ordered[0][1][0]].profiling_name
    if len(ordered[0][1]) > len(ordered[1][1]):
        ranks = tuple(sorted(rank for _, members in ordered[1:] for rank in members))
        odd = "; ".join(
            f"{ranks_label(members)} {_describe(fields, values, op, seq)}" for values, members in ordered[1:]
        )
        majority = f"{count_label(len(ordered[0][1]))} {_describe(fields, ordered[0][0], op)}"
        text = f"{odd} where {majority} (process group {where})"
    else:
        ranks = tuple(sorted(at_seq))
        text = f"process group {where} disagrees at #{seq}: " + "; ".join(
            f"{ranks_label(members)} {_describe(fields, values, op)}" for values, members in ordered
        )
    return Finding(FindingKind.MISMATCH, name, desc, seq, op, ranks, 0, False, text)


def _describe(fields: tuple[str, ...], values: tuple, op: str, seq: int | None = None) -> str:
    number = "" if seq is None else f" #{seq}"
    if fields == ("profiling_name",):
        return f"called {values[0]}{number}"
    shown = ", ".join(f"{field.replace('_', ' ')} {_value(value)}" for field, value in zip(fields, values, strict=True))
    return f"called {op}{number} with {shown}"


def _value(value: tuple) -> str:
    if all(isinstance(item, str) for item in value):
        return "[" + ", ".join(value) + "]"
    return "[" + ", ".join("[" + ", ".join(str(dim) for dim in dims) + "]" for dims in value) + "]"


def _peer(profiling_name: str, members: tuple[int, ...]) -> tuple[str, int, int] | None:
    """(kind, source, destination) of "nccl:send 0->1" or "nccl:recv 1<-0", as global ranks."""
    spec = profiling_name.split(":", 1)[-1].split(" ")
    if len(spec) != 2 or spec[0] not in ("send", "recv"):
        return None
    arrow = "->" if spec[0] == "send" else "<-"
    parts = spec[1].split(arrow)
    if len(parts) != 2 or not all(part.isdigit() for part in parts):
        return None
    local = [int(part) for part in parts]
    if max(local) >= len(members):
        return None
    first, second = (members[index] for index in local)
    return (spec[0], first, second) if spec[0] == "send" else (spec[0], second, first)


def _p2p_findings(name, desc, members, group_entries, by_rank, tracks_state, dumped_by) -> list[Finding]:
    """Pending sends and receives whose peer holds all its p2p operations of the group and posted no match (and
    that had waited their timeout by `dumped_by`, when it is known)."""
    if not tracks_state:
        return []
    channels: dict[tuple[str, int, int], list[Entry]] = {}  # (kind, source, destination) -> the poster's entries
    complete: set[int] = set()  # ranks whose buffers hold every p2p operation of the group
    for rank, rank_entries in group_entries.items():
        p2p = sorted((entry for entry in rank_entries if entry.is_p2p), key=lambda entry: entry.p2p_seq_id)
        if not p2p or p2p[0].p2p_seq_id <= 1:
            complete.add(rank)
        for entry in p2p:
            peer = _peer(entry.profiling_name, members)
            if peer is not None and rank == (peer[1] if peer[0] == "send" else peer[2]):
                channels.setdefault(peer, []).append(entry)
    findings = []
    for (kind, source, destination), posted in sorted(channels.items()):
        poster, peer = (source, destination) if kind == "send" else (destination, source)
        if peer not in by_rank or peer not in complete or poster not in complete:
            continue
        matching = len(channels.get(("recv" if kind == "send" else "send", source, destination), ()))
        for index, entry in enumerate(posted):
            if index < matching or entry.state == "completed" or _waited([entry], dumped_by)[2]:
                continue
            other = "recv" if kind == "send" else "send"
            text = (
                f"{ranks_label((peer,))} never posted the {other} matching rank {poster}'s {entry.profiling_name} "
                f"(p2p #{entry.p2p_seq_id} of rank {poster}, process group {group_label(name, desc)})"
            )
            findings.append(
                Finding(
                    FindingKind.NEVER_ENQUEUED,
                    name,
                    desc,
                    entry.p2p_seq_id,
                    entry.profiling_name,
                    (peer,),
                    1,
                    True,
                    text,
                )
            )
            break
    return findings


def _collective_label(collective: Collective) -> str:
    return f"{collective.op} #{collective.seq}"
