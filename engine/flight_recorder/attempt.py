"""One attempt's Flight Recorder dumps: read from its context, checked, analysed, and placed on its nodes.

`attempt_dumps(context)` reads every `<prefix><rank>` file of `traces/flight_recorder/` (within the reader's own
bounds: `unpickle.MAX_BYTES` per file, `MAX_FILES` files), analyses those it could read with the attempt's world size
(its rank map, so that a lost highest rank is seen), and keeps what it could not read: a refused or malformed dump is
a gap the diagnosis's `sources` report, never fatal. Each finding becomes one `Culprit` per node its ranks ran on
(the rank map; the only node of a one-node attempt); the rules turn culprits into events (engine/extract.py), the
attempt page shows `summary()`.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from engine.context import AttemptContext, TraceFile
from engine.flight_recorder import unpickle
from engine.flight_recorder.analysis import analyse
from engine.flight_recorder.dumps import Dump, parse_dump, rank_files
from engine.flight_recorder.errors import DumpError
from engine.flight_recorder.findings import (
    Finding,
    RankState,
    Report,
    format_ranks,
    group_label,
    ranks_label,
    waited_text,
)
from engine.flight_recorder.verdict import verdict

FOLDER = "traces/flight_recorder"
# The dumps were written by the attempt's end, as the scheduler records it (to the second) on its own clock: the
# bound allows this much for the rounding and the nodes' clocks (a hang waited its timeout before it was dumped).
CLOCK_SLACK_S = 2.0
# What the page calls each state at the collective a group waits on (completed / waited / never arrived).
BUCKETS = {
    RankState.COMPLETED: ("completed", "completed"),
    RankState.STARTED: ("waited", "waited in it"),
    RankState.SCHEDULED: ("waited", "waited in it"),
    RankState.ENQUEUED: ("waited", "waited in it"),
    RankState.NEVER_ENQUEUED: ("never_arrived", "never arrived"),
    RankState.HELD: ("held", "held in another group's hung collective"),
    RankState.NO_DUMP: ("no_dump", "left no dump"),
    RankState.UNKNOWN: ("unknown", "unknown (dump unreadable, empty or overwritten)"),
}
SHOWN_GROUPS = 20  # groups with something pending shown by summary(); the others are counted
SHOWN_NODES = 32  # culprit nodes named per finding by summary(); the others are counted
SHOWN_PROBLEMS = 5


@dataclass(frozen=True, slots=True)
class Culprit:
    """The ranks of one finding that ran on one node (None: a rank the attempt's rank map does not place)."""

    finding: Finding
    node: str | None
    ranks: tuple[int, ...]
    time: float | None  # unix seconds: when the first rank enqueued the operation named (None when none is)
    ref: str  # the dump of the culprit's first rank, or the folder when it left none
    verdict: str  # a culprit's: the line naming every rank the dumps blame, with its nodes; else the finding's line

    def captures(self) -> dict[str, str]:
        """What a `flight_recorder` rule may filter on and its summary may name."""
        finding = self.finding
        return {
            "kind": str(finding.kind),
            "rank": format_ranks(self.ranks),
            "ranks": format_ranks(finding.ranks),
            "culprits": str(len(finding.ranks)),
            "process_group": group_label(finding.process_group, finding.pg_desc),
            "pg_name": finding.process_group,
            "pg_desc": finding.pg_desc,
            "seq": "" if finding.seq is None else str(finding.seq),
            "op": finding.op or "",
            "waited": str(finding.waiting),
            "p2p": "true" if finding.p2p else "false",
            "detail": finding.text,
            "verdict": self.verdict,
        }

    @property
    def text(self) -> str:
        """The finding's line, with where these ranks ran when the finding spans several nodes."""
        if self.ranks == self.finding.ranks:
            return self.finding.text
        where = self.node or "a node the rank map does not name"
        return f"{self.finding.text} [{ranks_label(self.ranks)} on {where}]"


CAPTURES = frozenset(
    ("kind", "rank", "ranks", "culprits", "process_group", "pg_name", "pg_desc", "seq", "op", "waited", "p2p", "detail",
     "verdict")
)  # fmt: skip


@dataclass(frozen=True)
class AttemptDumps:
    files: int  # files in the folder
    dumps: tuple[Dump, ...]  # those read
    problems: tuple[tuple[str, str], ...]  # (ref, why) of the files that could not be read, or of the whole folder
    ignored: tuple[str, ...]  # files not named <prefix><rank>
    world_size: int | None  # from the attempt's rank map
    placed: bool  # whether ranks can be placed on nodes (a rank map, or a one-node attempt)
    complete: bool  # whether the connector that gathered them gathered every dump it found
    report: Report | None  # None when no dump could be read
    culprits: tuple[Culprit, ...]
    verdict: str = ""  # the line naming every rank the dumps blame, with its nodes ("" when none is)

    def source(self) -> dict:
        """The diagnosis's `sources` entry: what was read and what could not be."""
        read = len(self.dumps)
        formats = ", ".join(sorted({f"{dump.format}, version {dump.version}" for dump in self.dumps}))
        detail = f"{read:,} dump{'s' if read != 1 else ''} ({formats})" if read else f"no dump read of {self.files:,}"
        if self.report is not None and self.report.world_size > read:
            lost = sorted(set(range(self.report.world_size)) - set(self.report.ranks))
            detail += f" of {self.report.world_size:,} ranks; no dump of rank{'s' if len(lost) > 1 else ''} "
            detail += format_ranks(lost)
            if not self.complete:
                detail += " (not all gathered: unknown, not lost)"
        if self.ignored:
            count = len(self.ignored)
            shown = ", ".join(self.ignored[:3]) + (f" and {count - 3} more" if count > 3 else "")
            detail += f"; {count} other file{'s' if count > 1 else ''} ignored ({shown})"
        if read and not self.placed:
            detail += "; ranks not placed on nodes (attempt.json has no ranks or tasks_per_node)"
        if self.problems:
            detail += "; " + "; ".join(f"{ref}: {why}" for ref, why in self.problems[:SHOWN_PROBLEMS])
            if len(self.problems) > SHOWN_PROBLEMS:
                detail += f"; and {len(self.problems) - SHOWN_PROBLEMS} more unreadable"
        status = "ok" if not self.problems else "partial" if read else "unreadable"
        return {"name": "flight_recorder", "kind": "traces", "status": status, "detail": detail}

    def summary(self) -> dict:
        """A compact, JSON-ready view for the attempt page: per process group with something pending, the
        collective it waits on and its members as rank ranges by state; each finding with its culprits' nodes.
        Rank ranges keep it small whatever the number of ranks (1,024 ranks fit in a few hundred bytes)."""
        report = self.report
        out = {
            "dumps": len(self.dumps),
            "files": self.files,
            "unreadable": len(self.problems),
            "world_size": report.world_size if report else self.world_size,
            "healthy": bool(report and report.healthy),
            "verdict": self.verdict,
            "groups": [],
            "quiet_groups": 0,
            "findings": [],
        }
        if report is None:
            return out
        pending = [group for group in report.groups if group.pending is not None]
        out["quiet_groups"] = len(report.groups) - min(len(pending), SHOWN_GROUPS)
        for group in pending[:SHOWN_GROUPS]:
            buckets: dict[str, tuple[str, list[int]]] = {}
            for state_group in group.states:
                key, label = BUCKETS[state_group.state]
                if group.in_flight and state_group.state == RankState.NEVER_ENQUEUED:
                    label = "not arrived yet"
                buckets.setdefault(key, (label, []))[1].extend(state_group.ranks)
            out["groups"].append(
                {
                    "process_group": group_label(group.process_group, group.pg_desc),
                    "members": len(group.members),
                    "op": group.pending.op,
                    "seq": group.pending.seq,
                    "waited_on": group.waited_on,
                    "in_flight": group.in_flight,
                    "waited": waited_text(group) if group.waited_s is not None and group.waited_on else "",
                    "membership": group.membership,
                    "states": [
                        {"state": key, "label": label, "ranks": format_ranks(ranks), "count": len(ranks)}
                        for key, (label, ranks) in buckets.items()
                    ],
                }
            )
        by_finding: dict[Finding, list[Culprit]] = defaultdict(list)
        for culprit in self.culprits:
            by_finding[culprit.finding].append(culprit)
        for finding in report.findings:
            culprits = by_finding.get(finding, [])
            out["findings"].append(
                {
                    "kind": str(finding.kind),
                    "text": finding.text,
                    "process_group": group_label(finding.process_group, finding.pg_desc),
                    "op": finding.op,
                    "seq": finding.seq,
                    "ranks": format_ranks(finding.ranks),
                    "count": len(finding.ranks),
                    "nodes": [
                        {"node": culprit.node, "ranks": format_ranks(culprit.ranks), "count": len(culprit.ranks)}
                        for culprit in culprits[:SHOWN_NODES]
                    ],
                    "more_nodes": max(len(culprits) - SHOWN_NODES, 0),
                }
            )
        return out


def attempt_dumps(context: AttemptContext) -> AttemptDumps | None:
    """The attempt's dumps read and analysed; None when its context holds no Flight Recorder file."""
    files = context.flight_recorder
    if not files:
        return None
    attempt = context.attempt
    world_size = max(attempt.ranks) + 1 if attempt.ranks else None
    # the connector that gathered them could not gather them all (a node it could not reach, a file too large)
    complete = not any(r.kind == "traces" and r.status in ("partial", "error") for r in context.reports)
    by_name = {trace.name: trace for trace in files}
    try:
        ranked, ignored = rank_files(by_name, where=FOLDER)
    except DumpError as error:
        problem = ((FOLDER, _after(str(error), FOLDER)),)
        return AttemptDumps(len(files), (), problem, (), world_size, False, complete, None, ())
    dumps, problems = [], []
    for rank in sorted(ranked):
        trace = by_name[ranked[rank]]
        try:
            dumps.append(parse_dump(_read(trace), name=trace.ref, rank=rank))
        except DumpError as error:
            problems.append((trace.ref, _after(str(error), trace.ref)))
        except OSError as error:
            problems.append((trace.ref, f"unreadable ({error.strerror or error})"))
    placed = bool(attempt.ranks) or len(attempt.nodes) == 1
    if not dumps:
        return AttemptDumps(len(files), (), tuple(problems), ignored, world_size, placed, complete, None, ())
    unreadable = frozenset(ranked) - {dump.rank for dump in dumps}
    if not complete:  # a rank without a dump may just not have been gathered: unknown, not lost
        unreadable |= frozenset(range(world_size or 0)) - {dump.rank for dump in dumps}
    report = analyse(
        dumps, world_size=world_size, unreadable=unreadable, dumped_by=attempt.end.timestamp() + CLOCK_SLACK_S
    )

    def node_of(rank: int) -> str | None:
        if attempt.ranks:
            return attempt.ranks.get(rank)
        return attempt.nodes[0] if len(attempt.nodes) == 1 else None

    times = _first_times(dumps)

    def first(finding: Finding) -> float:
        return times.get((finding.process_group, finding.p2p, finding.seq), float("inf"))

    blamed = verdict(report.culprits, node_of, first)
    culprits = []
    for finding in report.findings:
        on_node: dict[str | None, list[int]] = defaultdict(list)
        for rank in finding.ranks:
            on_node[node_of(rank)].append(rank)
        time = times.get((finding.process_group, finding.p2p, finding.seq))
        for node in sorted(on_node, key=lambda name: (name is None, name or "")):
            ranks = tuple(on_node[node])
            ref = f"{FOLDER}/{ranked[ranks[0]]}" if ranks[0] in ranked else FOLDER
            culprits.append(Culprit(finding, node, ranks, time, ref, blamed if finding.blames else finding.text))
    return AttemptDumps(len(files), tuple(dumps), tuple(problems), ignored, world_size, placed, complete, report,
                        tuple(culprits), blamed)  # fmt: skip


def _read(trace: TraceFile) -> bytes:
    """The file's bytes, refused unread past the bound a dump may have."""
    with trace.opener() as handle:
        data = handle.read(unpickle.MAX_BYTES + 1)
    if len(data) > unpickle.MAX_BYTES:
        raise DumpError(f"{trace.ref}: more than the {unpickle.MAX_BYTES:,} bytes a dump may have")
    return data


def _first_times(dumps: list[Dump]) -> dict[tuple[str, bool, int], float]:
    """When each operation was first enqueued by any rank, in unix seconds: (process group, p2p, seq) -> time."""
    times: dict[tuple[str, bool, int], int] = {}
    for dump in dumps:
        for entry in dump.entries:
            key = (entry.process_group, entry.is_p2p, entry.seq)
            if entry.time_created_ns > 0 and (key not in times or entry.time_created_ns < times[key]):
                times[key] = entry.time_created_ns
    return {key: ns / 1e9 for key, ns in times.items()}


def _after(message: str, prefix: str) -> str:
    """The error without the file name it starts with (the report names the file once)."""
    return message[len(prefix) + 2 :] if message.startswith(prefix + ": ") else message
