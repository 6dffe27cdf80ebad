"""Extract events: run the rules over the attempt's log streams, scheduler events, metrics and record.

Log streams are read in blocks; one prefilter scan per block finds candidate lines and only those
are decoded, normalised and matched with the rules' RE2 patterns. Memory stays bounded whatever
the size of a stream: a block at a time, and a capped number of distinct events per rule.
"""

from __future__ import annotations

import math
from collections import defaultdict, deque
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from engine.context import AttemptContext, LogStream
from engine.events import Event
from engine.flight_recorder.attempt import AttemptDumps
from engine.limits import DEFAULT_LIMITS, Interrupt, Limits
from engine.normalise import (
    AUDIT_ANCHOR,
    BOOT_START,
    RAW_RANK,
    RTC_ANCHOR,
    BootClock,
    Clock,
    Parsed,
    line_rank,
    parse_line,
)
from engine.prefilter import Prefilter
from engine.ruleset import Rule, RuleSet
from engine.timing import BlockTimes, Stamp, own_stamp

BLOCK_BYTES = 8 << 20  # a line is cut at the larger of this and Limits.line_bytes
EVENTS_PER_RULE = 500  # distinct events kept per rule and stream; further ones only count
CADENCE = 32  # the latest times of each progress rule and node that its cadence is measured on
LATEST_WINDOW = 64 << 10  # bytes of a node's own stream scanned at a time for its latest progress lines
ANCHORS = (RTC_ANCHOR.pattern, AUDIT_ANCHOR.pattern, BOOT_START.pattern)
# A process the kernel killed (a rule tagged ``process.killed``) is seen gone by its supervisor (``process.exited``)
# at most this long after: torchrun polls its workers every 5 s (0.1 s since PyTorch 2.2's ``--monitor-interval``),
# and a process with a large address space takes seconds to exit once killed.
EXIT_NOTICED_WITHIN = 30.0


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
    unanchored: list[_Placement] = field(default_factory=list)  # events dated only by unanchored kernel uptime


class _Plan:
    """The patterns of one stream kind, behind one prefilter (two: see below).

    Progress patterns whose event's node is the line's are ``latest_only``: only the last line and the latest
    ``CADENCE`` dated lines of each (rule, node) count. In a node's own stream the block's scan reports each of
    them once, at its first line (``prefilter_once``); ``latest`` then scans the block for them alone, from its
    end backwards a window at a time, until what is left cannot change the result. In a stream that mixes
    nodes any line may be another node's, so ``prefilter`` reports them all, kept apart from the other patterns'
    matches and unresolved to lines (``Prefilter.scan_apart``); they are read last to first
    (``Extractor.latest_progress``), and the lines of a node that has all it needs skipped undecoded. With
    ``shortcut`` off, every line of every pattern is read first to last (the plain way, for tests)."""

    def __init__(self, rules: list[Rule], anchors: bool, cache: Path | None, shortcut: bool = True):
        self.entries: list[tuple[Rule | None, object, tuple]] = []
        patterns = []
        for rule in rules:
            for text, regex in zip(rule.patterns, rule.compiled, strict=True):
                self.entries.append((rule, regex, _filters_for(rule, regex)))
                patterns.append(text)
        if anchors:
            for text in ANCHORS:
                self.entries.append((None, None, ()))
                patterns.append(text)
        self.latest_only = [
            shortcut and rule is not None and rule.role == "progress" and not rule.node_from and not filters
            for rule, _, filters in self.entries
        ]
        once = frozenset(pid for pid, latest in enumerate(self.latest_only) if latest)
        self.prefilter = Prefilter(patterns, cache)
        self.prefilter_once = Prefilter(patterns, cache, once) if once else self.prefilter
        self.pids_of: dict[str, list[int]] = defaultdict(list)  # rule -> its patterns
        for pid, (rule, _, _) in enumerate(self.entries):
            if rule is not None:
                self.pids_of[rule.id].append(pid)
        self.latest_pids = sorted(once)  # the ``latest`` prefilter's pattern i is the plan's pattern latest_pids[i]
        self.latest = Prefilter([patterns[pid] for pid in self.latest_pids], cache) if once else None


class Extractor:
    """Compiled once per rule set; ``extract`` runs it on one attempt."""

    def __init__(self, ruleset: RuleSet, cache: Path | None = None, *, shortcut: bool = True):
        """``shortcut=False`` matches every progress line first to last (what the shortcut must equal; tests)."""
        self.ruleset = ruleset
        self.plans = {
            kind: _Plan([r for r in ruleset.rules if r.patterns and kind in r.kinds], kind == "system", cache, shortcut)
            for kind in ("system", "app", "scheduler")
        }
        self.event_rules = [r for r in ruleset.rules if r.patterns and "events" in r.kinds]
        self.metric_rules = [r for r in ruleset.rules if r.metric]
        self.attempt_rules = [r for r in ruleset.rules if r.attempt]
        self.silence_rules = [r for r in ruleset.rules if r.silence]
        self.stall_rules = [r for r in ruleset.rules if r.stall]
        self.flight_recorder_rules = [r for r in ruleset.rules if r.flight_recorder]

    def extract(
        self,
        context: AttemptContext,
        dumps: AttemptDumps | None = None,
        *,
        limits: Limits = DEFAULT_LIMITS,
        interrupt: Interrupt | None = None,
        threads: int = 1,
    ) -> tuple[list[Event], list[StreamStats]]:
        """The attempt's events; ``dumps`` are its Flight Recorder dumps as ``attempt_dumps`` read them.
        ``interrupt`` is called between blocks of the log streams (it raises to stop). With ``threads`` > 1
        the streams are scanned by that many threads; the events are the same, in the same order."""
        attempt = context.attempt
        clock = Clock(attempt.timezone, attempt.start, attempt.end)
        nodes = NodeNames(attempt.nodes)
        events: list[Event] = []
        stats = []

        def scan(stream: LogStream):
            return self.scan_stream(
                stream, clock, nodes, attempt.ranks, attempt.job_id, line_bytes=limits.line_bytes, interrupt=interrupt
            )

        streams = sorted(context.streams, key=lambda s: s.ref)
        if threads > 1 and len(streams) > 1:  # Hyperscan and reading release the GIL: streams overlap
            with ThreadPoolExecutor(max_workers=threads) as pool:
                scanned = list(pool.map(scan, streams))  # in stream order, whatever finishes first
        else:
            scanned = [scan(stream) for stream in streams]
        for found, stat in scanned:
            events.extend(found)
            stats.append(stat)
        _anchor_by_killed_processes(events, stats)
        events.extend(self.silence_events(context, stats))
        events.extend(self.stall_events(context, stats))
        events.extend(self.scheduler_events(context, nodes))
        events.extend(self.metric_events(context, nodes))
        events.extend(self.attempt_events(context))
        events.extend(self.flight_recorder_events(dumps, nodes))
        return events, stats

    # -- log streams --

    def scan_stream(
        self,
        stream: LogStream,
        clock: Clock,
        nodes: NodeNames,
        ranks: Mapping[int, str],
        job_id: str = "",
        *,
        line_bytes: int = Limits.line_bytes,
        interrupt: Interrupt | None = None,
    ):
        kind = stream.kind
        plan = self.plans[kind]
        system = kind == "system"
        allowed = [rule is None or rule.applies_to(kind, stream.name) for rule, _, _ in plan.entries]
        later_only = [a and latest for a, latest in zip(allowed, plan.latest_only, strict=True)]
        windowed = nodes.canonical(stream.node) is not None and any(later_only)  # a node's own stream
        mixed = not windowed and any(later_only)  # a stream of many nodes' progress lines
        prefilter = plan.prefilter_once if windowed else plan.prefilter
        stat = StreamStats(stream)
        found: dict[tuple, Event] = {}
        per_rule: dict[str, list[Event]] = defaultdict(list)
        boot = stat.boot
        placed: list[_Placement] = []  # each new event's stamps, turned into times once the stream is read
        waiting: list[_Placement] = []  # events whose later neighbour lies in a later block
        cadence: dict[tuple, deque] = defaultdict(lambda: deque(maxlen=CADENCE))  # latest times of each progress rule
        line_base = 0
        carried: Stamp | None = None  # the stamp at the last line of the earlier blocks

        def parse(raw: bytes) -> Parsed:
            return parse_line(_decode(raw), clock, system, nodes.knows)

        try:
            handle = stream.opener()
        except OSError as exc:
            stat.error = f"unreadable ({exc.strerror or exc})"
            return [], stat
        try:
            with handle:
                for block, end in _blocks(handle, line_bytes, stat):  # block[:end]: whole lines
                    if interrupt is not None:
                        interrupt()
                    stat.bytes += end
                    times = BlockTimes(block, end, parse, carried)
                    if waiting:
                        later, further = times.first()
                        for placement in waiting:
                            placement.high = later
                        if not further:
                            waiting = []
                    cursor_pos, cursor_line = 0, line_base
                    progressed: dict[tuple[str, str | None], tuple] = {}  # the block's last line of each
                    first: dict[int, int] = {}  # windowed: latest_only pattern -> the start of its first line
                    if not any(allowed):
                        hits, apart = [], []
                    elif mixed:  # the latest_only patterns' matches, apart: read last to first (latest_progress)
                        hits, apart = prefilter.scan_apart(block, end, later_only)
                    else:
                        hits, apart = prefilter.scan(block, end), []
                    for line_start, pids in _group(hits):
                        if len(pids) == 1 and later_only[pids[0]]:  # windowed: most candidates of a training log
                            first.setdefault(pids[0], line_start)
                            continue
                        cursor_line += block.count(b"\n", cursor_pos, line_start)
                        cursor_pos = line_start
                        line_no = cursor_line + 1
                        line_end = block.find(b"\n", line_start, end)
                        text = None
                        rule_pids, later = [], []
                        for pid in pids:
                            if plan.entries[pid][0] is None:
                                text = text or _decode(block[line_start : line_end if line_end != -1 else end])
                                boot.see(line_no, text)
                            elif allowed[pid]:
                                (later if later_only[pid] else rule_pids).append(pid)
                        for pid in later:  # windowed
                            first.setdefault(pid, line_start)
                        if not rule_pids:
                            continue
                        text = text or _decode(block[line_start : line_end if line_end != -1 else end])
                        parsed = parse_line(text, clock, system, nodes.knows)
                        node = nodes.place(stream.node, parsed, ranks)
                        for pid in rule_pids:
                            rule, regex, filters = plan.entries[pid]
                            match = regex.search(parsed.message)
                            if match is None:
                                continue
                            captures = {k: v for k, v in match.groupdict().items() if v is not None}
                            if not all(f.accepts(captures, job_id) for f in filters):
                                continue
                            event_node = (
                                nodes.canonical(captures.get(rule.node_from)) or node if rule.node_from else node
                            )
                            if rule.role == "progress":
                                progressed[(rule.id, event_node)] = (rule, line_no, parsed, line_start, line_end, text)
                                if parsed.time is not None:
                                    cadence[(rule.id, event_node)].append(parsed.time)
                                continue
                            key = (rule.id, event_node, parsed.message[:2000])
                            event = found.get(key)
                            if event is None and len(per_rule[rule.id]) >= EVENTS_PER_RULE:
                                event = per_rule[rule.id][-1]
                            if event is not None:
                                event.count += 1
                                if parsed.time is not None:
                                    event.last = parsed.time
                                continue
                            event = Event(
                                rule=rule, node=event_node, time=None, exact=False, source=stream.name, kind=kind,
                                ref=f"{stream.ref}:{line_no}", text=text, captures=captures,
                            )  # fmt: skip
                            found[key] = event
                            per_rule[rule.id].append(event)
                            placement = _place(event, line_no, parsed, times, line_start, line_end)
                            placed.append(placement)
                            if placement.waits:
                                waiting.append(placement)
                    block_lines = cursor_line + block.count(b"\n", cursor_pos, end)  # one pass over each block
                    latest_times = self.latest_progress(
                        apart, first, block, end, block_lines, progressed, stream, clock, nodes, ranks
                    )
                    for key, times_of_key in latest_times.items():
                        cadence[key].extend(reversed(times_of_key))
                    for key, (rule, line_no, parsed, line_start, line_end, text) in progressed.items():
                        event = Event(
                            rule=rule, node=key[1], time=None, exact=False, source=stream.name, kind=kind,
                            ref=f"{stream.ref}:{line_no}", text=text,
                        )  # fmt: skip
                        placement = _place(event, line_no, parsed, times, line_start, line_end)
                        placed.append(placement)
                        if placement.waits:
                            waiting.append(placement)
                        stat.progress[key] = Progress(event, cadence[key])
                    stat.lines = block_lines
                    carried = times.last() or carried
                    line_base = stat.lines
            if stat.bytes and block[end - 1 : end] != b"\n":
                stat.lines += 1
        except OSError as exc:
            stat.error = f"read failed ({exc.strerror or exc})"
        for placement in placed:
            placement.settle(boot)
        stat.unanchored = [placement for placement in placed if placement.unanchored(boot)]
        stat.tail = carried
        stat.last = _resolve(boot, stat.lines, carried, high=False)
        return list(found.values()), stat

    def latest_progress(
        self, apart, first, block, end, block_lines, progressed, stream, clock, nodes, ranks
    ) -> dict[tuple, list[float]]:
        """Match the block's lines of ``latest_only`` progress patterns last to first: record each (rule, node)'s
        last line in ``progressed``, and return its latest ``CADENCE`` dated times, latest first. The lines are
        those of ``apart`` (``Prefilter.scan_apart``'s matches in a stream of many nodes), or, in a node's own
        stream, found by the plan's ``latest`` prefilter window by window from the block's end: ``first`` holds
        each pattern found in the block and the start of its first line (no earlier line matches it), and the
        windows stop once each pattern's (rule, node) has what it needs or its first line is read. A line whose
        node its prefix tells (or its stream) is skipped unread once its (rule, node) has them all. The result is
        what matching every line first to last gives, at a fraction of the cost on training logs, where most lines
        are progress lines. ``block_lines``: the
        stream's lines up to the block's end; the lines read are numbered counting back from there."""
        plan = self.plans[stream.kind]
        system = stream.kind == "system"
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
                hits = list(_group(plan.latest.scan(block, window_end, window_start)))
                for line_start, found in reversed(hits):
                    yield line_start, [pid for pid in (plan.latest_pids[index] for index in found) if pid in first]
                window_end = window_start

        counted_from, newlines_before = end, block_lines  # newlines before offset counted_from
        for line_start, pids in windows() if first else _lines_back(block, apart, len(plan.entries)):
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
                    text = _decode(block[line_start : line_end if line_end != -1 else end])
                    rank = line_rank(text, system, nodes.knows)
                    if rank not in owners:
                        owners[rank] = nodes.canonical(ranks.get(rank))
                node = owners[rank]
            if node is not None and full[node].issuperset(pids):
                continue
            newlines_before -= block.count(b"\n", line_start, counted_from)
            counted_from, line_no = line_start, newlines_before + 1
            line_end = block.find(b"\n", line_start, end)
            if text is None:
                text = _decode(block[line_start : line_end if line_end != -1 else end])
            parsed = None
            for pid in pids:
                rule, regex, _ = plan.entries[pid]
                if node is not None and pid in full[node]:
                    continue  # its node has all it needs from this block
                if parsed is None:
                    parsed = parse_line(text, clock, system, nodes.knows)
                    node = nodes.place(stream.node, parsed, ranks)
                if regex.search(parsed.message) is None:
                    continue
                key = (rule.id, node)
                progressed.setdefault(key, (rule, line_no, parsed, line_start, line_end, text))
                dated = times.setdefault(key, [])
                if parsed.time is not None and len(dated) < CADENCE:
                    dated.append(parsed.time)
                    if len(dated) == CADENCE:
                        full[node].update(plan.pids_of[rule.id])
        return times

    # -- scheduler events, metrics and the attempt record --

    def silence_events(self, context: AttemptContext, stats: list[StreamStats]) -> list[Event]:
        """Nodes whose logs stop well before the other nodes' (a node lost mid-job just goes quiet)."""
        attempt = context.attempt
        out = []
        for rule in self.silence_rules:
            last: dict[str, StreamStats] = {}
            for stat in stats:
                node = stat.stream.node
                if node not in attempt.nodes or stat.stream.kind not in rule.silence.kinds or stat.last is None:
                    continue
                if node not in last or stat.last > last[node].last:
                    last[node] = stat
            for node, stat in sorted(last.items()):
                others = sorted(s.last for n, s in last.items() if n != node)
                if not others:
                    continue
                reference = others[len(others) // 2]
                gap = reference - stat.last
                if gap < rule.silence.min_gap or not attempt.start.timestamp() <= stat.last <= attempt.end.timestamp():
                    continue
                text = f"the logs of {node} stop {gap / 60:.0f} min before the other nodes' ({stat.stream.ref})"
                out.append(
                    Event(
                        rule=rule, node=node, time=stat.last, exact=True, source=stat.stream.name,
                        kind=stat.stream.kind, ref=f"{stat.stream.ref}:{stat.lines}", text=text,
                        captures={"minutes": f"{gap / 60:.0f}"}, last=stat.last,
                    )
                )  # fmt: skip
        return out

    def stall_events(self, context: AttemptContext, stats: list[StreamStats]) -> list[Event]:
        """The job's progress stopped long before its end: one event at its last progress line."""
        end = context.attempt.end.timestamp()
        out = []
        for rule in self.stall_rules:
            condition = rule.stall
            records = [r for s in stats for r in s.progress.values() if condition.progress.selects(r.event.rule)]
            if not records:
                continue
            last = max(records, key=lambda r: (_or(r.event.high, end), _or(r.event.low, 0.0), r.event.ref))
            stopped = _or(last.event.high, end)
            gap = end - stopped
            if gap < max(condition.min_gap, condition.cadence * last.interval()):
                continue
            source = last.event
            nodes = {r.event.node for r in records}
            out.append(
                Event(
                    rule=rule, node=source.node if len(nodes) == 1 else None, time=source.time, exact=source.exact,
                    source=source.source, kind="app", ref=source.ref, text=source.text,
                    captures={"minutes": f"{gap / 60:.0f}", "last": source.text[:200]},
                    last=source.time, low=source.low, high=source.high,
                )
            )  # fmt: skip
        return out

    def scheduler_events(self, context: AttemptContext, nodes: NodeNames) -> list[Event]:
        out = []
        for item in context.events:
            text = f"{item.reason}: {item.message}" if item.reason else item.message
            for rule in self.event_rules:
                if not rule.applies_to("events", item.source):
                    continue
                for regex in rule.compiled:
                    match = regex.search(text)
                    if match is None:
                        continue
                    captures = {k: v for k, v in match.groupdict().items() if v is not None}
                    if not all(f.accepts(captures, context.attempt.job_id) for f in _filters_for(rule, regex)):
                        continue
                    node = nodes.canonical((captures.get(rule.node_from) if rule.node_from else None) or item.node)
                    time = item.time.timestamp() if item.time else None
                    out.append(
                        Event(
                            rule=rule, node=node, time=time, exact=time is not None, source=item.source,
                            kind="events", ref=item.ref, text=text, captures=captures, last=time,
                        )
                    )  # fmt: skip
                    break
        return out

    def metric_events(self, context: AttemptContext, nodes: NodeNames) -> list[Event]:
        attempt = context.attempt
        margin = self.ruleset.settings.scope_margin
        low, high = attempt.start.timestamp() - margin, attempt.end.timestamp() + margin
        out = []
        for rule in self.metric_rules:
            condition = rule.metric
            for series in context.metrics:
                if not condition.selects(series.name, series.labels):
                    continue
                for before, stamp, captures, description in _metric_hits(condition, series.samples, low, high):
                    captures = {**series.labels, **captures}
                    if not all(f.accepts(captures) for f in rule.filters):
                        continue
                    labels = ",".join(f'{k}="{v}"' for k, v in sorted(series.labels.items()) if k != "__name__")
                    out.append(
                        Event(
                            rule=rule, node=nodes.canonical(series.node), time=_or(before, stamp), exact=False,
                            source=series.name, kind="metrics", ref=series.ref,
                            text=f"{series.name}{{{labels}}} {description}", captures=captures, last=stamp,
                            low=before, high=stamp,
                        )
                    )  # fmt: skip
                    if condition.function != "changes":
                        break
        return out

    def attempt_events(self, context: AttemptContext) -> list[Event]:
        attempt = context.attempt
        text = f"state={attempt.state} exit_code={attempt.exit_code or '-'} reason={attempt.reason or '-'}"
        end = attempt.end.timestamp()
        captures = {"state": attempt.state, "exit_code": attempt.exit_code, "reason": attempt.reason}
        return [
            Event(
                rule=rule,
                node=None,
                time=end,
                exact=True,
                source="attempt",
                kind="scheduler",
                ref="attempt.json",
                text=text,
                captures=captures,
                last=end,
            )  # fmt: skip
            for rule in self.attempt_rules
            if rule.attempt.accepts(attempt)
        ]

    def flight_recorder_events(self, dumps: AttemptDumps | None, nodes: NodeNames) -> list[Event]:
        """One event per finding of the Flight Recorder analysis and node its ranks ran on, at the time the first
        rank enqueued the operation (the dumps' own clock); captures rank, process group, seq, op, waited..."""
        if dumps is None:
            return []
        out = []
        for rule in self.flight_recorder_rules:
            for culprit in dumps.culprits:
                if culprit.finding.kind not in rule.flight_recorder.findings:
                    continue
                captures = culprit.captures()
                if not all(f.accepts(captures) for f in rule.filters):
                    continue
                out.append(
                    Event(
                        rule=rule, node=nodes.canonical(culprit.node), time=culprit.time,
                        exact=culprit.time is not None, source="flight_recorder", kind="traces", ref=culprit.ref,
                        text=culprit.text, captures=captures, last=culprit.time,
                    )
                )  # fmt: skip
        return out


class NodeNames:
    """Maps the names logs use for hosts (short names, FQDNs) to the attempt's node names."""

    def __init__(self, nodes: tuple[str, ...]):
        self.nodes = set(nodes)
        self.short = {node.split(".")[0]: node for node in nodes}
        self.only = nodes[0] if len(nodes) == 1 else None

    def canonical(self, name: str | None) -> str | None:
        if not name:
            return None
        if name in self.nodes:
            return name
        return self.short.get(name.split(".")[0], name)

    def knows(self, name: str) -> bool:
        """Is ``name`` one of the attempt's nodes (by its full or short name)?"""
        return name in self.nodes or name.split(".")[0] in self.short

    def place(self, stream_node: str | None, parsed: Parsed, ranks: dict[int, str]) -> str | None:
        """The node a line belongs to: its stream's node, else its rank, host field or prefix; the workload
        output of a one-node attempt is that node's."""
        if stream_node is not None:
            return self.canonical(stream_node)
        if parsed.rank is not None and parsed.rank in ranks:
            return self.canonical(ranks[parsed.rank])
        return self.canonical(parsed.host) or self.only


def _filters_for(rule: Rule, regex) -> tuple:
    """The rule's filters that apply to one of its patterns: those on captures the pattern defines."""
    return tuple(f for f in rule.filters if f.name in regex.groupindex)


def _metric_hits(condition, samples, low: float, high: float):
    """(earlier sample's time, time, captures, description) for each sample where the condition holds inside
    [low, high]: what a sample shows happened after the sample before it, and by its own time."""
    previous = None
    base = None
    before = None
    for stamp, value in samples:
        if stamp < low:
            previous = value
            base = value
            before = stamp
            continue
        if stamp > high:
            break
        if condition.function == "changes":
            if previous is not None and value != previous and condition.compare(value):
                yield (
                    before,
                    stamp,
                    {"value": _number(value), "previous": _number(previous)},
                    (f"changed {_number(previous)} -> {_number(value)}"),
                )
        elif condition.function == "increase":
            if base is None:
                base = value
            elif previous is not None and value < previous:  # counter reset
                base -= previous
            increase = value - base
            if condition.compare(increase):
                yield before, stamp, {"value": _number(increase)}, f"increased by {_number(increase)}"
        elif condition.compare(value):  # max / min: the first sample past the threshold
            yield (
                before,
                stamp,
                {"value": _number(value)},
                f"{condition.function} {condition.op} {_number(condition.threshold)}: {_number(value)}",
            )
        previous = value
        before = stamp


def _number(value: float) -> str:
    return str(int(value)) if math.isfinite(value) and value == int(value) else repr(value)


def _blocks(handle, line_bytes: int, stat: StreamStats):
    """(data, end) pairs: ``data[:end]`` holds whole lines. A line longer than ``line_bytes`` (at least a
    block) is cut: its first ``line_bytes`` come as a line, the rest up to its newline is skipped and
    ``stat.cut`` counts it; the lines after it are read as usual.

    A seekable stream is read without copying: the partial last line is read again with the next block.
    """
    line_bytes = max(line_bytes, BLOCK_BYTES)
    seekable = handle.seekable()
    carry = b""
    skipping = False  # inside a cut line
    while True:
        data = handle.read(BLOCK_BYTES)
        if skipping and data:
            newline = data.find(b"\n")
            if newline == -1:
                continue
            data, skipping = data[newline + 1 :], False
            if not data:
                continue
        block, carry = (carry + data if carry else data), b""
        if not block:
            return
        if not data:  # the end of the stream: what is left is its last line
            yield block, len(block)
            return
        cut = block.rfind(b"\n") + 1
        if cut == 0:  # no line ends in this block
            if len(block) >= line_bytes:
                stat.cut += 1
                skipping = True
                yield block[:line_bytes] + b"\n", line_bytes + 1
            else:
                carry = block  # keep reading until the line ends or reaches line_bytes
            continue
        if cut < len(block):
            if seekable:
                handle.seek(cut - len(block), 1)
            else:
                carry = block[cut:]
        yield block, cut


def _group(hits: list[tuple[int, int]]):
    """(line start, [pattern ids]) from sorted (line start, pattern id) pairs."""
    current, pids = -1, []
    for start, pid in hits:
        if start != current:
            if pids:
                yield current, pids
            current, pids = start, []
        pids.append(pid)
    if pids:
        yield current, pids


def _lines_back(block: bytes, apart: list[int], width: int):
    """(line start, [pattern ids]) of ``Prefilter.scan_apart``'s apart matches, last line first."""
    line_start, pids = 0, []
    for value in reversed(apart):
        offset, pid = divmod(value, width)
        if pids and offset >= line_start:  # another match on the same line
            if pid not in pids:
                pids.append(pid)
            continue
        if pids:
            yield line_start, pids if len(pids) == 1 else sorted(pids)
        line_start, pids = block.rfind(b"\n", 0, offset) + 1, [pid]
    if pids:
        yield line_start, pids if len(pids) == 1 else sorted(pids)


def _decode(raw: bytes) -> str:
    return raw.decode("utf-8", "replace").rstrip("\r")


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


def _or(value: float | None, default: float) -> float:
    return default if value is None else value


@dataclass(slots=True)
class _Placement:
    """What is known of one event's time while its stream is read: its own stamp, or the stamps of the
    stamped lines around it (``high`` may come from a later block: ``waits``)."""

    event: Event
    line_no: int
    low: Stamp | None
    high: Stamp | None
    exact: bool
    waits: bool = False

    def settle(self, boot: BootClock) -> None:
        """Turn the stamps into the event's times, kernel uptime resolved through the boot anchors."""
        event = self.event
        low = _resolve(boot, self.line_no, self.low, high=False)
        high = _resolve(boot, self.line_no, self.high, high=True)
        exact = self.exact and low is not None and (not self.low.uptime or boot.exact(self.line_no))
        event.exact = exact
        event.low, event.high = (low, low) if exact else (low, high)
        event.time = low if low is not None else high
        if event.last is None or event.time is not None and event.last < event.time:
            event.last = event.time

    def unanchored(self, boot: BootClock) -> bool:
        """Whether a kernel uptime stamp left this event's time unknown (no boot anchor in its stream)."""
        return any(
            stamp is not None and stamp.uptime and boot.resolve(self.line_no, stamp.low) is None
            for stamp in (self.low, self.high)
        )


def _place(event: Event, line_no: int, parsed: Parsed, times: BlockTimes, start: int, end: int) -> _Placement:
    own = own_stamp(parsed)
    if own is not None and parsed.span == 0:
        return _Placement(event, line_no, own, own, exact=True)
    if own is not None or parsed.delta is not None:  # a coarse stamp, or relative to earlier lines
        stamp = times.at_or_before(start, parsed)
        return _Placement(event, line_no, stamp, stamp, exact=False)
    low = times.at_or_before(start, parsed)
    high, waits = times.after(end if end != -1 else times.end)
    return _Placement(event, line_no, low, high, exact=False, waits=waits)


def _resolve(boot: BootClock, line_no: int, stamp: Stamp | None, *, high: bool) -> float | None:
    if stamp is None:
        return None
    value = stamp.high if high else stamp.low
    return boot.resolve(line_no, value, high=high) if stamp.uptime else value


def _anchor_by_killed_processes(events: list[Event], stats: list[StreamStats]) -> None:
    """Date kernel logs that have no boot anchor of their own by a process the kernel killed (the OOM killer names
    its pid) that another stream saw exit at a known time (torchrun's ``failed (exitcode: -9) local_rank: 0 (pid:
    N)``) on the same node: the kill happened at most ``EXIT_NOTICED_WITHIN`` before that, which bounds the boot's
    time, and so every line of that boot. The events of such streams get those bounds, as approximate times."""
    exited: dict[tuple[str | None, str], float] = {}  # (node, pid) -> when a supervisor first saw it gone
    for event in events:
        pid = event.captures.get("pid")
        if pid and event.exact and "process.exited" in event.rule.tags:
            key = (event.node, pid)
            exited[key] = min(exited.get(key, event.time), event.time)
    if not exited:
        return
    for stat in stats:
        bounded = False
        for placement in stat.unanchored:
            event = placement.event
            seen = exited.get((event.node, event.captures.get("pid", "")))
            if seen is not None and "process.killed" in event.rule.tags and placement.low and placement.low.uptime:
                bounded |= stat.boot.bound(placement.line_no, placement.low.low, seen - EXIT_NOTICED_WITHIN, seen)
        if bounded:
            for placement in stat.unanchored:
                placement.settle(stat.boot)
            stat.last = _resolve(stat.boot, stat.lines, stat.tail, high=False)
