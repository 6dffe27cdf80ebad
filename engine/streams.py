"""Events from the log streams: each stream read in blocks, one prefilter scan per block finding the candidate
lines, and only those decoded, normalised and matched with the rules (``engine.matching``).

Memory stays bounded whatever the size of a stream: a block at a time, and a capped number of distinct events
per rule. Progress lines (``role: progress``) are kept apart: only each (rule, node)'s last line and the times of
its latest ones count (``Progress``), and training logs are mostly progress lines, so most are never decoded
(``StreamScan.latest_progress``).
"""

from __future__ import annotations

from collections import defaultdict, deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from engine.blocks import blocks, decode, group, lines_back
from engine.context import LogStream
from engine.events import Event
from engine.limits import Interrupt, Limits
from engine.matching import LinePattern, event_node, line_patterns, stream_mismatch
from engine.node_names import NodeNames
from engine.normalise import AUDIT_ANCHOR, BOOT_START, RAW_RANK, RTC_ANCHOR, BootClock, Clock, Parsed, line_rank
from engine.normalise import parse_line as normalise
from engine.placement import Placement, place, resolve
from engine.prefilter import Prefilter
from engine.ruleset import Rule
from engine.timing import BlockTimes, Stamp

EVENTS_PER_RULE = 500  # distinct events kept per rule and stream; further ones only count
CADENCE = 32  # the latest times of each progress rule and node that its cadence is measured on
LATEST_WINDOW = 64 << 10  # bytes of a node's own stream scanned at a time for its latest progress lines
ANCHORS = (RTC_ANCHOR.pattern, AUDIT_ANCHOR.pattern, BOOT_START.pattern)


@dataclass(slots=True)
class Progress:
    """The last line of one progress rule on one node, and the times of its latest lines (its cadence)."""

    event: Event
    times: deque

    def interval(self) -> float:
        """The usual time between progress lines (the median gap), 0 when fewer than two are dated."""
        stamps = sorted(self.times)
        gaps = sorted(b - a for a, b in zip(stamps, stamps[1:], strict=False))
        return gaps[len(gaps) // 2] if gaps else 0.0


@dataclass
class StreamStats:
    stream: LogStream
    lines: int = 0
    bytes: int = 0
    error: str = ""
    cut: int = 0  # lines longer than the line limit, cut there
    last: float | None = None
    progress: dict[tuple[str, str | None], Progress] = field(default_factory=dict)  # by (rule, node)
    boot: BootClock = field(default_factory=BootClock)
    tail: Stamp | None = None  # the stamp at the stream's last line (``last`` once resolved)
    unanchored: list[Placement] = field(default_factory=list)  # events dated only by unanchored kernel uptime


class Plan:
    """The patterns of one stream kind, behind one prefilter (two: see below). Entry ``pid`` is the prefilter's
    pattern ``pid``: a rule's pattern, or (None) a boot anchor of the kernel's clock.

    Progress patterns whose event's node is the line's are ``latest_only``: only the last line and the latest
    ``CADENCE`` dated lines of each (rule, node) count. In a node's own stream the block's scan reports each of
    them once, at its first line (``prefilter_once``); ``latest`` then scans the block for them alone, from its
    end backwards a window at a time, until what is left cannot change the result. In a stream that mixes
    nodes any line may be another node's, so ``prefilter`` reports them all, kept apart from the other patterns'
    matches and unresolved to lines (``Prefilter.scan_apart``); they are read last to first
    (``StreamScan.latest_progress``), and the lines of a node that has all it needs skipped undecoded. With
    ``shortcut`` off, every line of every pattern is read first to last (the plain way, for tests)."""

    def __init__(self, rules: list[Rule], anchors: bool, cache: Path | None, shortcut: bool = True):
        self.entries: list[LinePattern | None] = [pattern for rule in rules for pattern in line_patterns(rule)]
        texts = [pattern.text for pattern in self.entries]
        if anchors:
            self.entries += [None] * len(ANCHORS)
            texts += ANCHORS
        self.latest_only = [
            shortcut and entry is not None and entry.rule.role == "progress" and not entry.rule.node_from
            and not entry.filters
            for entry in self.entries
        ]  # fmt: skip
        once = frozenset(pid for pid, latest in enumerate(self.latest_only) if latest)
        self.prefilter = Prefilter(texts, cache)
        self.prefilter_once = Prefilter(texts, cache, once) if once else self.prefilter
        self.pids_of: dict[str, list[int]] = defaultdict(list)  # rule -> its patterns
        for pid, entry in enumerate(self.entries):
            if entry is not None:
                self.pids_of[entry.rule.id].append(pid)
        self.latest_pids = sorted(once)  # the ``latest`` prefilter's pattern i is the plan's pattern latest_pids[i]
        self.latest = Prefilter([texts[pid] for pid in self.latest_pids], cache) if once else None
        self._allowed: dict[tuple[str, str], list[bool]] = {}

    def allowed(self, kind: str, name: str) -> list[bool]:
        """Which entries look at a stream of that kind and name (the rules' ``streams`` and ``files``)."""
        key = (kind, name)
        if key not in self._allowed:
            self._allowed[key] = [
                entry is None or stream_mismatch(entry.rule, kind, name) is None for entry in self.entries
            ]
        return self._allowed[key]


class StreamScan:
    """One log stream read through its kind's plan: ``run`` returns its events and its ``StreamStats``."""

    def __init__(
        self, plan: Plan, stream: LogStream, clock: Clock, nodes: NodeNames, ranks: Mapping[int, str], job_id: str
    ):
        self.plan, self.stream, self.clock, self.nodes, self.ranks, self.job_id = (
            plan,
            stream,
            clock,
            nodes,
            ranks,
            job_id,
        )
        self.system = stream.kind == "system"
        self.allowed = plan.allowed(stream.kind, stream.name)
        self.later_only = [a and latest for a, latest in zip(self.allowed, plan.latest_only, strict=True)]
        self.windowed = nodes.canonical(stream.node) is not None and any(self.later_only)  # a node's own stream
        self.mixed = not self.windowed and any(self.later_only)  # a stream of many nodes' progress lines
        self.stat = StreamStats(stream)
        self.found: dict[tuple, Event] = {}
        self.per_rule: dict[str, list[Event]] = defaultdict(list)
        self.placed: list[Placement] = []  # each new event's stamps, turned into times once the stream is read
        self.waiting: list[Placement] = []  # events whose later neighbour lies in a later block
        self.cadence: dict[tuple, deque] = defaultdict(
            lambda: deque(maxlen=CADENCE)
        )  # latest times of each (rule, node)
        self.carried: Stamp | None = None  # the stamp at the last line of the earlier blocks

    def parse(self, raw: bytes) -> Parsed:
        return normalise(decode(raw), self.clock, self.system, self.nodes.knows)

    def run(
        self, line_bytes: int = Limits.line_bytes, interrupt: Interrupt | None = None
    ) -> tuple[list[Event], StreamStats]:
        stat = self.stat
        try:
            handle = self.stream.opener()
        except OSError as exc:
            stat.error = f"unreadable ({exc.strerror or exc})"
            return [], stat
        block, end = b"", 0
        try:
            with handle:
                for block, end in blocks(handle, line_bytes, stat):  # block[:end]: whole lines
                    if interrupt is not None:
                        interrupt()
                    self.read_block(block, end)
            if stat.bytes and block[end - 1 : end] != b"\n":
                stat.lines += 1
        except OSError as exc:
            stat.error = f"read failed ({exc.strerror or exc})"
        boot = stat.boot
        for placement in self.placed:
            placement.settle(boot)
        stat.unanchored = [placement for placement in self.placed if placement.unanchored(boot)]
        stat.tail = self.carried
        stat.last = resolve(boot, stat.lines, self.carried, high=False)
        return list(self.found.values()), stat

    def read_block(self, block: bytes, end: int) -> None:
        """Match the block's candidate lines; its progress lines last to first (``latest_progress``)."""
        plan, stat, allowed, later_only = self.plan, self.stat, self.allowed, self.later_only
        stat.bytes += end
        times = BlockTimes(block, end, self.parse, self.carried)
        if self.waiting:
            later, further = times.first()
            for placement in self.waiting:
                placement.high = later
            if not further:
                self.waiting = []
        cursor_pos, cursor_line = 0, stat.lines
        progressed: dict[tuple[str, str | None], tuple] = {}  # the block's last line of each (rule, node)
        first: dict[int, int] = {}  # windowed: latest_only pattern -> the start of its first line
        if not any(allowed):
            hits, apart = [], []
        elif self.mixed:  # the latest_only patterns' matches, apart: read last to first (latest_progress)
            hits, apart = plan.prefilter.scan_apart(block, end, later_only)
        else:
            hits, apart = (plan.prefilter_once if self.windowed else plan.prefilter).scan(block, end), []
        for line_start, pids in group(hits):
            if len(pids) == 1 and later_only[pids[0]]:  # windowed: most candidates of a training log
                first.setdefault(pids[0], line_start)
                continue
            cursor_line += block.count(b"\n", cursor_pos, line_start)
            cursor_pos = line_start
            line_end = block.find(b"\n", line_start, end)
            text = None
            rule_pids = []
            for pid in pids:
                if plan.entries[pid] is None:
                    text = text or decode(block[line_start : line_end if line_end != -1 else end])
                    stat.boot.see(cursor_line + 1, text)
                elif not allowed[pid]:
                    continue
                elif later_only[pid]:  # windowed
                    first.setdefault(pid, line_start)
                else:
                    rule_pids.append(pid)
            if rule_pids:
                text = text or decode(block[line_start : line_end if line_end != -1 else end])
                self.match_line(text, rule_pids, cursor_line + 1, line_start, line_end, times, progressed)
        block_lines = cursor_line + block.count(b"\n", cursor_pos, end)  # one pass over each block
        latest_times = self.latest_progress(apart, first, block, end, block_lines, progressed)
        for key, times_of_key in latest_times.items():
            self.cadence[key].extend(reversed(times_of_key))
        for key, (rule, line_no, parsed, line_start, line_end, text) in progressed.items():
            event = Event(
                rule=rule, node=key[1], time=None, exact=False, source=self.stream.name, kind=self.stream.kind,
                ref=f"{self.stream.ref}:{line_no}", text=text,
            )  # fmt: skip
            self.date(event, line_no, parsed, times, line_start, line_end)
            stat.progress[key] = Progress(event, self.cadence[key])
        stat.lines = block_lines
        self.carried = times.last() or self.carried

    def match_line(self, text, pids, line_no, line_start, line_end, times, progressed) -> None:
        """One candidate line against the patterns the prefilter found on it: a new event, one more of an
        identical line's, or (a progress rule) the latest line of its (rule, node)."""
        parsed = normalise(text, self.clock, self.system, self.nodes.knows)
        node = self.nodes.place(self.stream.node, parsed, self.ranks)
        for pid in pids:
            pattern = self.plan.entries[pid]
            tested = pattern.test(parsed.message, self.job_id)
            if tested is None or tested[1] is not None:
                continue
            captures = tested[0]
            rule = pattern.rule
            at = event_node(rule, captures, node, self.nodes.canonical)
            if rule.role == "progress":
                progressed[(rule.id, at)] = (rule, line_no, parsed, line_start, line_end, text)
                if parsed.time is not None:
                    self.cadence[(rule.id, at)].append(parsed.time)
                continue
            key = (rule.id, at, parsed.message[:2000])
            event = self.found.get(key)
            if event is None and len(self.per_rule[rule.id]) >= EVENTS_PER_RULE:
                event = self.per_rule[rule.id][-1]
            if event is not None:
                event.count += 1
                if parsed.time is not None:
                    event.last = parsed.time
                continue
            event = Event(
                rule=rule, node=at, time=None, exact=False, source=self.stream.name, kind=self.stream.kind,
                ref=f"{self.stream.ref}:{line_no}", text=text, captures=captures, hint=pattern.hint,
            )  # fmt: skip
            self.found[key] = event
            self.per_rule[rule.id].append(event)
            self.date(event, line_no, parsed, times, line_start, line_end)

    def date(self, event: Event, line_no: int, parsed: Parsed, times: BlockTimes, start: int, end: int) -> None:
        """Note what the block knows of the event's time; it is settled once the stream is read."""
        placement = place(event, line_no, parsed, times, start, end)
        self.placed.append(placement)
        if placement.waits:
            self.waiting.append(placement)

    def latest_progress(self, apart, first, block, end, block_lines, progressed) -> dict[tuple, list[float]]:
        """Match the block's lines of ``latest_only`` progress patterns last to first: record each (rule, node)'s
        last line in ``progressed``, and return its latest ``CADENCE`` dated times, latest first. The lines are
        those of ``apart`` (``Prefilter.scan_apart``'s matches in a stream of many nodes), or, in a node's own
        stream, found by the plan's ``latest`` prefilter window by window from the block's end: ``first`` holds
        each pattern found in the block and the start of its first line (no earlier line matches it), and the
        windows stop once each pattern's (rule, node) has what it needs or its first line is read. A line whose
        node its prefix tells (or its stream) is skipped unread once its (rule, node) has them all. The result is
        what matching every line first to last gives, at a fraction of the cost on training logs, where most lines
        are progress lines. ``block_lines``: the stream's lines up to the block's end; the lines read are numbered
        counting back from there."""
        plan, stream, nodes, ranks = self.plan, self.stream, self.nodes, self.ranks
        times: dict[tuple, list[float]] = {}
        owners: dict[int | bytes | None, str | None] = {None: None}  # rank (or its digits) -> its node, as ``place``
        own = nodes.canonical(stream.node)  # a node's own stream: one (rule, node) per rule, known unread
        full: dict[str | None, set[int]] = defaultdict(set)  # node -> patterns whose (rule, node) has all it needs

        def complete(pid: int) -> bool:
            return pid in full[own]

        def windows():
            window_end, floor = end, min(first.values())
            while window_end > floor and not all(window_end <= at or complete(pid) for pid, at in first.items()):
                window_start = max(block.rfind(b"\n", floor, max(window_end - LATEST_WINDOW, floor)) + 1, floor)
                hits = list(group(plan.latest.scan(block, window_end, window_start)))
                for line_start, found in reversed(hits):
                    yield line_start, [pid for pid in (plan.latest_pids[index] for index in found) if pid in first]
                window_end = window_start

        counted_from, newlines_before = end, block_lines  # newlines before offset counted_from
        for line_start, pids in windows() if first else lines_back(block, apart, len(plan.entries)):
            text = None
            if own is not None:
                node = own
            else:
                if (match := RAW_RANK.match(block, line_start)) is not None:  # most ranks' lines: no decoding
                    rank = match.group(1)
                    if rank not in owners:
                        owners[rank] = nodes.canonical(ranks.get(int(rank)))
                else:
                    line_end = block.find(b"\n", line_start, end)
                    text = decode(block[line_start : line_end if line_end != -1 else end])
                    rank = line_rank(text, self.system, nodes.knows)
                    if rank not in owners:
                        owners[rank] = nodes.canonical(ranks.get(rank))
                node = owners[rank]
            if node is not None and full[node].issuperset(pids):
                continue
            newlines_before -= block.count(b"\n", line_start, counted_from)
            counted_from, line_no = line_start, newlines_before + 1
            line_end = block.find(b"\n", line_start, end)
            if text is None:
                text = decode(block[line_start : line_end if line_end != -1 else end])
            parsed = None
            for pid in pids:
                pattern = plan.entries[pid]
                if node is not None and pid in full[node]:
                    continue  # its node has all it needs from this block
                if parsed is None:
                    parsed = normalise(text, self.clock, self.system, nodes.knows)
                    node = nodes.place(stream.node, parsed, ranks)
                if pattern.test(parsed.message) is None:
                    continue
                rule = pattern.rule
                key = (rule.id, node)
                progressed.setdefault(key, (rule, line_no, parsed, line_start, line_end, text))
                dated = times.setdefault(key, [])
                if parsed.time is not None and len(dated) < CADENCE:
                    dated.append(parsed.time)
                    if len(dated) == CADENCE:
                        full[node].update(plan.pids_of[rule.id])
        return times
