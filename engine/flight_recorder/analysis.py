"""Which rank stopped: the collective each process group waits on, and who never arrived, from per-rank dumps.

For each process group (told apart by name, which every rank shares):

* the members: the group's `pg_config` ranks; for the default group without one, ranks 0..world_size-1; else the
  ranks whose dumps hold entries of the group (a member that left neither a dump nor an entry cannot be seen);
* the collective the ranks wait on: the lowest collective sequence number not completed by every member that left a
  dump, where a rank that never enqueued it has not completed it. An entry counts as done when its state is
  `completed`; for a backend that records no start or completion (every entry `scheduled`, Gloo's case) when it is
  retired. When every such collective is done but members left no dump, the group's last collective stands in,
  flagged as not known to be waited on;
* the findings at that collective: `never_enqueued` (ranks whose dump reaches back to it but does not hold it: the
  straggler, the stuck or dead rank), `not_started` (ranks that enqueued it while others started it, only where the
  backend records starts), `missing_dump` (members that left no dump);
* `mismatch` at every sequence number that two or more ranks hold: a different op, or different input/output sizes or
  dtypes where the op requires them equal (a desynchronised program). The ranks named are those apart from a strict
  majority; without one, every rank at that sequence number;
* for point-to-point operations (recorded by NCCL, not by Gloo) in a group whose members are known, a send or receive
  not completed whose peer's dump holds all of its point-to-point operations of the group and has no matching one:
  `never_enqueued` for the peer.

Everything is sorted; nothing depends on the order of files, entries, dicts or sets.
"""

from collections import Counter
from dataclasses import dataclass
from enum import StrEnum

from engine.flight_recorder.dumps import Dump, Entry, GroupConfig


class RankState(StrEnum):
    """Where a rank stands at the collective its group waits on."""

    COMPLETED = "completed"
    STARTED = "started"
    SCHEDULED = "scheduled"  # enqueued, not started (a backend that records starts)
    ENQUEUED = "enqueued"  # enqueued; the backend records no start or completion
    NEVER_ENQUEUED = "never_enqueued"
    UNKNOWN = "unknown"  # its dump holds nothing that far back, or nothing at all, or could not be read
    NO_DUMP = "no_dump"


WAITED = (RankState.STARTED, RankState.SCHEDULED, RankState.ENQUEUED)


class FindingKind(StrEnum):
    NEVER_ENQUEUED = "never_enqueued"
    NOT_STARTED = "not_started"
    MISMATCH = "mismatch"
    MISSING_DUMP = "missing_dump"


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


@dataclass(frozen=True, slots=True)
class Collective:
    """A collective (or, with p2p, a point-to-point operation) of a process group, as most ranks recorded it."""

    process_group: str
    pg_desc: str
    seq: int
    op: str
    p2p: bool = False
    input_sizes: tuple[tuple[int, ...], ...] = ()
    input_dtypes: tuple[str, ...] = ()
    output_sizes: tuple[tuple[int, ...], ...] = ()
    output_dtypes: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Finding:
    kind: FindingKind
    process_group: str
    pg_desc: str
    seq: int | None  # None: no collective to name (a missing dump in a group with nothing pending)
    op: str | None
    ranks: tuple[int, ...]  # the ranks the finding is about
    waiting: int  # how many ranks waited on the collective (never_enqueued, not_started, missing_dump)
    p2p: bool
    text: str


@dataclass(frozen=True, slots=True)
class RankGroup:
    state: RankState
    ranks: tuple[int, ...]

    @property
    def text(self) -> str:
        return format_ranks(self.ranks)


@dataclass(frozen=True, slots=True)
class GroupReport:
    process_group: str
    pg_desc: str
    members: tuple[int, ...]
    pending: Collective | None  # the collective the ranks wait on; None when nothing is pending
    waited_on: bool  # False: `pending` is only the last collective entered (everything done, some dumps missing)
    states: tuple[RankGroup, ...]  # where each member stands at `pending`, in RankState order


@dataclass(frozen=True, slots=True)
class Report:
    ranks: tuple[int, ...]  # the ranks that left a dump
    world_size: int
    groups: tuple[GroupReport, ...]
    findings: tuple[Finding, ...]

    @property
    def healthy(self) -> bool:
        return not self.findings and all(group.pending is None for group in self.groups)

    def summary(self) -> str:
        """A compact text: per group the pending collective and the members by state, as rank ranges."""
        lines = []
        for group in self.groups:
            head = f"process group {group_label(group.process_group, group.pg_desc)}, {len(group.members)} ranks"
            if group.pending is None:
                lines.append(f"{head}: nothing pending")
                continue
            verb = "waits on" if group.waited_on else "last entered"
            lines.append(f"{head}: {verb} {group.pending.op} #{group.pending.seq}")
            lines.extend(f"  {rank_group.state}: {rank_group.text}" for rank_group in group.states)
        lines.extend(finding.text for finding in self.findings)
        return "\n".join(lines)


def analyse(
    dumps: tuple[Dump, ...] | list[Dump], *, world_size: int | None = None, unreadable: frozenset[int] = frozenset()
) -> Report:
    """The report of a set of per-rank dumps. `world_size` (the job's) reveals missing dumps of the highest ranks;
    `unreadable` ranks left a dump that could not be read: they are unknown, not lost."""
    by_rank = {dump.rank: dump for dump in dumps}
    if len(by_rank) != len(dumps):
        raise ValueError("two dumps of the same rank")
    world = max([world_size or 0, *(rank + 1 for rank in [*by_rank, *unreadable])])
    entries: dict[str, dict[int, list[Entry]]] = {}
    descs: dict[str, str] = {}
    for rank in sorted(by_rank):
        for entry in by_rank[rank].entries:
            entries.setdefault(entry.process_group, {}).setdefault(rank, []).append(entry)
            descs.setdefault(entry.process_group, entry.pg_desc)
    configs = _configs(by_rank)
    names = sorted(set(entries) | set(configs), key=_natural)
    groups, findings = [], []
    for name in names:
        desc = descs.get(name) or (configs[name].desc if name in configs else "")
        group_entries = entries.get(name, {})
        members, known = _members(name, desc, configs.get(name), group_entries, world)
        report, group_findings = _analyse_group(name, desc, members, known, group_entries, by_rank, unreadable)
        groups.append(report)
        findings.extend(group_findings)
    findings.sort(
        key=lambda f: (_natural(f.process_group), f.p2p, -1 if f.seq is None else f.seq, _KIND_ORDER[f.kind], f.ranks)
    )
    return Report(tuple(sorted(by_rank)), world, tuple(groups), tuple(findings))


def format_ranks(ranks: tuple[int, ...] | list[int]) -> str:
    """Ranks as ranges: (0, 1, 2, 3, 5, 7, 8) -> "0-3, 5, 7-8"."""
    parts = []
    ordered = sorted(set(ranks))
    index = 0
    while index < len(ordered):
        end = index
        while end + 1 < len(ordered) and ordered[end + 1] == ordered[end] + 1:
            end += 1
        parts.append(str(ordered[index]) if end == index else f"{ordered[index]}-{ordered[end]}")
        index = end + 1
    return ", ".join(parts)


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


def _members(name, desc, config, group_entries, world) -> tuple[tuple[int, ...], bool]:
    """The group's global ranks, and whether they are known (rather than seen in the dumps)."""
    if config is not None:
        return tuple(sorted(set(config.ranks))), True
    if desc == "default_pg":
        return tuple(range(world)), True
    return tuple(sorted(group_entries)), False


def _done(entry: Entry, tracks_state: bool) -> bool:
    return entry.state == "completed" if tracks_state else entry.retired is not False


def _analyse_group(name, desc, members, known, group_entries, by_rank, unreadable) -> tuple[GroupReport, list[Finding]]:
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
    if known:  # p2p names group-local ranks: without the membership they cannot be placed
        findings.extend(_p2p_findings(name, desc, members, group_entries, by_rank, tracks_state))
    if pending_seq is None:
        states = ()
        if lost:
            findings.append(_missing(name, desc, lost, None, None, 0, waited_on))
        return GroupReport(name, desc, members, None, False, states), findings

    if not any(pending_seq in seqs for seqs in collectives.values()):  # overwritten everywhere: the next one held
        pending_seq = min(seq for seqs in collectives.values() for seq in seqs if seq > pending_seq)
    at_seq = {rank: seqs[pending_seq] for rank, seqs in collectives.items() if pending_seq in seqs}
    pending = _majority_collective(name, desc, pending_seq, at_seq)
    by_state: dict[RankState, list[int]] = {}
    for rank in members:
        state = _state(rank, pending_seq, collectives, by_rank, at_seq, tracks_state, unreadable)
        by_state.setdefault(state, []).append(rank)
    states = tuple(RankGroup(state, tuple(by_state[state])) for state in RankState if state in by_state)
    waiting = sum(len(by_state.get(state, ())) for state in WAITED)
    label, where = _collective_label(pending), group_label(name, desc)
    if by_state.get(RankState.NEVER_ENQUEUED):
        ranks = tuple(by_state[RankState.NEVER_ENQUEUED])
        text = f"{ranks_label(ranks)} never entered {label} (process group {where}; {_count(waiting)} waited)"
        findings.append(
            Finding(FindingKind.NEVER_ENQUEUED, name, desc, pending_seq, pending.op, ranks, waiting, False, text)
        )
    moved = len(by_state.get(RankState.STARTED, ())) + len(by_state.get(RankState.COMPLETED, ()))
    if by_state.get(RankState.SCHEDULED) and moved:
        ranks = tuple(by_state[RankState.SCHEDULED])
        text = (
            f"{ranks_label(ranks)} enqueued {label} but never started it "
            f"(process group {where}; {_count(moved)} started it)"
        )
        findings.append(
            Finding(FindingKind.NOT_STARTED, name, desc, pending_seq, pending.op, ranks, waiting, False, text)
        )
    if lost:
        findings.append(_missing(name, desc, lost, pending, label, waiting, waited_on))
    return GroupReport(name, desc, members, pending, waited_on, states), findings


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
        text += f"; {_count(waiting)} {verb} {label}"
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
        text = (
            f"{odd} where {_count(len(ordered[0][1]))} {_describe(fields, ordered[0][0], op)} (process group {where})"
        )
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


def _p2p_findings(name, desc, members, group_entries, by_rank, tracks_state) -> list[Finding]:
    """Pending sends and receives whose peer holds all its p2p operations of the group and posted no match."""
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
            if index < matching or entry.state == "completed":
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


def group_label(name: str, desc: str) -> str:
    return f"{name} ({desc})" if desc and desc not in ("undefined", name) else name


def ranks_label(ranks) -> str:
    return f"rank {ranks[0]}" if len(ranks) == 1 else f"ranks {format_ranks(ranks)}"


def _count(number: int) -> str:
    return f"{number:,} rank" if number == 1 else f"{number:,} ranks"
