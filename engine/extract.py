"""Extract events: run the rules over everything known about one attempt, one stage per kind of input.

The log streams (``engine.streams``, each line checked by ``engine.matching``), then what is read from when
they stop (``engine.stalls``), then the inputs that are not logs (``engine.records``): scheduler events, metrics,
the scheduler's record of the attempt and the findings of its Flight Recorder dumps; last, where the peers the
symptoms name converge, and the nodes the bundle's history names (``engine.origins``).
"""

from __future__ import annotations

from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from engine import origins, records, stalls
from engine.context import AttemptContext, LogStream
from engine.events import Event
from engine.flight_recorder.attempt import AttemptDumps
from engine.limits import DEFAULT_LIMITS, Interrupt, Limits
from engine.node_names import NodeNames
from engine.normalise import Clock
from engine.placement import anchor_by_killed_processes
from engine.ruleset import RuleSet
from engine.streams import Plan, StreamScan, StreamStats


class Extractor:
    """Compiled once per rule set; ``extract`` runs it on one attempt."""

    def __init__(self, ruleset: RuleSet, cache: Path | None = None, *, shortcut: bool = True):
        """``shortcut=False`` matches every progress line first to last (what the shortcut must equal; tests)."""
        self.ruleset = ruleset
        self.plans = {
            kind: Plan([r for r in ruleset.rules if r.patterns and kind in r.kinds], kind == "system", cache, shortcut)
            for kind in ("system", "app", "scheduler")
        }
        self.event_rules = [r for r in ruleset.rules if r.patterns and "events" in r.kinds]
        self.metric_rules = [r for r in ruleset.rules if r.metric]
        self.attempt_rules = [r for r in ruleset.rules if r.attempt]
        self.silence_rules = [r for r in ruleset.rules if r.silence]
        self.stall_rules = [r for r in ruleset.rules if r.stall]
        self.flight_recorder_rules = [r for r in ruleset.rules if r.flight_recorder]
        self.converge_rules = [r for r in ruleset.rules if r.converge]
        self.first_rules = [r for r in ruleset.rules if r.first]
        self.history_rules = [r for r in ruleset.rules if r.history]

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
        anchor_by_killed_processes(events, stats)
        events.extend(stalls.silence_events(self.silence_rules, context, stats))
        events.extend(stalls.stall_events(self.stall_rules, context, stats))
        events.extend(self.scheduler_events(context, nodes))
        events.extend(records.metric_events(self.metric_rules, context, nodes, self.ruleset.settings.scope_margin))
        events.extend(records.attempt_events(self.attempt_rules, context))
        events.extend(records.flight_recorder_events(self.flight_recorder_rules, dumps, nodes))
        events.extend(origins.first_events(self.first_rules, events, attempt))
        events.extend(origins.convergence_events(self.converge_rules, events, attempt, nodes))
        events.extend(origins.history_events(self.history_rules, events, attempt, context.history))
        return events, stats

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
    ) -> tuple[list[Event], StreamStats]:
        """One log stream's events and statistics."""
        return StreamScan(self.plans[stream.kind], stream, clock, nodes, ranks, job_id).run(line_bytes, interrupt)

    def scheduler_events(self, context: AttemptContext, nodes: NodeNames) -> list[Event]:
        """The scheduler and Kubernetes events the rules recognise."""
        return records.scheduler_events(self.event_rules, context, nodes)
