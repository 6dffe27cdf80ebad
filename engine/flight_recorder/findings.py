"""What the analysis of a set of dumps reports: per process group the collective it waits on and where each member
stands there, and the findings (engine.flight_recorder.analysis makes them)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class RankState(StrEnum):
    """Where a rank stands at the collective its group waits on."""

    COMPLETED = "completed"
    STARTED = "started"
    SCHEDULED = "scheduled"  # enqueued, not started (a backend that records starts)
    ENQUEUED = "enqueued"  # enqueued; the backend records no start or completion
    NEVER_ENQUEUED = "never_enqueued"
    HELD = "held"  # never entered it (or never started it): it waits in another group's hung collective
    UNKNOWN = "unknown"  # its dump holds nothing that far back, or nothing at all, or could not be read
    NO_DUMP = "no_dump"


WAITED = (RankState.STARTED, RankState.SCHEDULED, RankState.ENQUEUED)


class FindingKind(StrEnum):
    NEVER_ENQUEUED = "never_enqueued"
    NOT_STARTED = "not_started"
    MISMATCH = "mismatch"
    MISSING_DUMP = "missing_dump"
    DEADLOCK = "deadlock"


# The kinds that name the ranks a hang waited for (when ranks waited: `Finding.waiting`): the culprits.
CULPRIT_KINDS = (FindingKind.NEVER_ENQUEUED, FindingKind.NOT_STARTED, FindingKind.MISSING_DUMP)


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
    seq: int | None  # None: no collective to name (a missing dump in a group with nothing hung)
    op: str | None
    ranks: tuple[int, ...]  # the ranks the finding is about
    waiting: int  # how many ranks waited in the hung collective (never_enqueued, not_started, missing_dump)
    p2p: bool
    text: str

    @property
    def blames(self) -> bool:
        """Whether it names ranks a hang waited for: the culprits."""
        return self.kind in CULPRIT_KINDS and self.waiting > 0


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
    membership: (
        str  # how the members are known: recorded, world, inferred or entries (engine.flight_recorder.membership)
    )
    pending: Collective | None  # the collective the ranks wait on; None when nothing is pending
    waited_on: bool  # False: `pending` is only the last collective entered (everything done, some dumps missing)
    states: tuple[RankGroup, ...]  # where each member stands at `pending`, in RankState order
    waited_s: float | None = None  # the longest any member had waited in `pending` by the dump (None: unknown)
    timeout_s: float | None = None  # that member's timeout for it
    in_flight: bool = False  # every member had waited less than its timeout by the dump: no hang, no evidence


@dataclass(frozen=True, slots=True)
class Report:
    ranks: tuple[int, ...]  # the ranks that left a dump
    world_size: int
    groups: tuple[GroupReport, ...]
    findings: tuple[Finding, ...]

    @property
    def healthy(self) -> bool:
        return not self.findings and all(group.pending is None for group in self.groups)

    @property
    def culprits(self) -> tuple[Finding, ...]:
        """The findings that blame ranks (those the default pack's straggler rules select)."""
        return tuple(finding for finding in self.findings if finding.blames)

    def summary(self) -> str:
        """A compact text: per group the pending collective and the members by state, as rank ranges."""
        lines = []
        for group in self.groups:
            head = f"process group {group_label(group.process_group, group.pg_desc)}, {len(group.members)} ranks"
            if group.membership == "inferred":
                head += " (membership inferred)"
            if group.pending is None:
                lines.append(f"{head}: nothing pending")
                continue
            verb = "in flight" if group.in_flight else "waits on" if group.waited_on else "last entered"
            line = f"{head}: {verb} {group.pending.op} #{group.pending.seq}"
            if group.waited_s is not None and group.waited_on:
                line += f" ({waited_text(group)})"
            lines.append(line)
            lines.extend(f"  {rank_group.state}: {rank_group.text}" for rank_group in group.states)
        lines.extend(finding.text for finding in self.findings)
        return "\n".join(lines)


def waited_text(group: GroupReport) -> str:
    """ "waited at most 0.4 s of its 60 s timeout by the dump" (the dump's time is bounded by the attempt's end)."""
    timeout = "" if group.timeout_s is None else f" of its {group.timeout_s:g} s timeout"
    return f"waited at most {group.waited_s:,.1f} s{timeout} by the dump"


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


def group_label(name: str, desc: str) -> str:
    return f"{name} ({desc})" if desc and desc not in ("undefined", name) else name


def ranks_label(ranks, *, capital: bool = False) -> str:
    """ "rank 3", "ranks 6-7" (plural for a range as for a list)."""
    many = len(set(ranks)) > 1
    noun = ("Ranks" if many else "Rank") if capital else ("ranks" if many else "rank")
    return f"{noun} {format_ranks(ranks)}"


def count_label(number: int) -> str:
    return f"{number:,} rank" if number == 1 else f"{number:,} ranks"
