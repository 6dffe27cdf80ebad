"""Faultline's attribution engine: ``AttemptContext + RuleSet -> Diagnosis``.

A pure library: the standard library and its regex engines, no Django, no network, no clock.
The same context and rule set give byte-identical output.
"""

from dataclasses import dataclass
from pathlib import Path

from engine.attribution import attribute
from engine.context import AttemptContext
from engine.events import Event
from engine.extract import Extractor
from engine.flight_recorder.attempt import AttemptDumps, attempt_dumps
from engine.limits import DEFAULT_LIMITS, Interrupt, Limits
from engine.loader import RuleError, RuleSetError, load_rules, parse_ruleset
from engine.report import build, to_json, to_text
from engine.ruleset import RuleSet

__all__ = [
    "Analysis",
    "Engine",
    "Limits",
    "RuleError",
    "RuleSetError",
    "diagnose",
    "load_rules",
    "parse_ruleset",
    "to_json",
    "to_text",
]


@dataclass(frozen=True)
class Analysis:
    """A diagnosis and the events behind it: every event in scope that survived the rules' conditions,
    in time order, each with its final role (root_cause, candidate, cascade, teardown, context or ""); and the
    attempt's Flight Recorder dumps as read and analysed (None without any)."""

    diagnosis: dict
    events: list[Event]
    dumps: AttemptDumps | None = None


class Engine:
    """A rule set compiled for scanning. Build one per rule set and reuse it across attempts.

    ``cache`` is an optional directory for compiled pattern databases, for short-lived processes.
    """

    def __init__(self, ruleset: RuleSet, cache: Path | None = None):
        self.ruleset = ruleset
        self.extractor = Extractor(ruleset, cache)

    def analyse(
        self,
        context: AttemptContext,
        *,
        limits: Limits = DEFAULT_LIMITS,
        interrupt: Interrupt | None = None,
        threads: int = 1,
    ) -> Analysis:
        """``limits``: how long a log line may be (the other limits apply when the bundle is read);
        ``interrupt``: called as the log streams are read, it raises to stop a long analysis; ``threads``: how
        many log streams are scanned at once (the diagnosis is the same whatever their number)."""
        dumps = attempt_dumps(context)
        events, stats = self.extractor.extract(context, dumps, limits=limits, interrupt=interrupt, threads=threads)
        covered: dict[str, set[str]] = {}
        for stat in stats:
            if stat.stream.node is not None and stat.lines and not stat.error:
                covered.setdefault(stat.stream.kind, set()).add(stat.stream.node)
        result = attribute(events, context.attempt, self.ruleset, covered)
        shown = [e for e in result.events if e.rule.role != "note" or e.role]  # notes are read, not shown
        return Analysis(build(context, self.ruleset, result, stats, dumps), shown, dumps)

    def diagnose(self, context: AttemptContext, **options) -> dict:
        return self.analyse(context, **options).diagnosis


def diagnose(context: AttemptContext, ruleset: RuleSet, cache: Path | None = None) -> dict:
    """Diagnose one attempt with ``ruleset`` (compiles the rule set; use ``Engine`` to reuse it)."""
    return Engine(ruleset, cache).diagnose(context)
