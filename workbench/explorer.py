"""The rule explorer: which rules match one log line, with their captures, and for each rule that does
not, which of its conditions failed, checked in the order the engine checks them.

Pure (no Django): built on the engine's own pieces, its line normaliser (``parse_line``) and the step that
checks a rule against a line (``engine.matching``), which the extraction calls too: the explanation is the
engine's own reasoning, not a second implementation of the rule language.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime

from engine.context import stream_kind
from engine.matching import line_patterns, stream_mismatch
from engine.normalise import Clock, Parsed, parse_line
from engine.ruleset import Filter, Rule, RuleSet

LOG_KINDS = ("system", "app", "scheduler", "events")


@dataclass(frozen=True)
class Verdict:
    """One rule against one line: ``matched``, or the condition that ``failed`` and why."""

    rule: Rule
    matched: bool
    failed: str = ""  # matcher | streams | files | pattern | where
    reason: str = ""
    captures: dict[str, str] = field(default_factory=dict)
    pattern: str = ""  # the pattern that matched (or, for a failed filter, the one whose captures failed it)
    beyond: tuple[str, ...] = ()  # conditions that a single line cannot decide (count, solo, ...)


@dataclass(frozen=True)
class Exploration:
    line: str
    kind: str
    stream: str
    parsed: Parsed
    verdicts: tuple[Verdict, ...]

    @property
    def matches(self) -> list[Verdict]:
        return [v for v in self.verdicts if v.matched]


def explore(
    ruleset: RuleSet,
    line: str,
    *,
    stream: str = "syslog",
    kind: str = "",
    job_id: str = "",
    zone: str = "UTC",
    around: datetime | None = None,
) -> Exploration:
    """Every rule of ``ruleset`` against ``line`` of the stream named ``stream`` (a file stem such as
    ``syslog`` or ``torchrun``, or for ``kind="events"`` the event's source). ``kind`` defaults to the
    stream's kind; ``job_id`` is the attempt's (for ``same_job``); ``zone`` and ``around`` (a moment
    near the line, for year-less timestamps) only affect the time shown."""
    kind = kind or stream_kind(stream)
    if kind not in LOG_KINDS:
        raise ValueError(f"{kind!r} is not a log stream kind ({', '.join(LOG_KINDS)})")
    line = line.rstrip("\r\n")
    parsed = _normalise(line, kind, zone, around or datetime(2000, 1, 1, tzinfo=UTC))
    verdicts = tuple(why(rule, parsed, kind=kind, stream=stream, job_id=job_id) for rule in ruleset.rules)
    return Exploration(line, kind, stream, parsed, verdicts)


def _normalise(line: str, kind: str, zone: str, around: datetime) -> Parsed:
    if kind == "events":  # scheduler events are matched as "Reason: message", as written
        return Parsed(None, None, None, None, line)
    return parse_line(line, Clock(zone, around, around), kind == "system")


def why(rule: Rule, parsed: Parsed, *, kind: str, stream: str, job_id: str = "") -> Verdict:
    """Does ``rule`` match the normalised line, and if not, which condition fails first?"""
    beyond = _beyond(rule)
    if not rule.patterns:
        matchers = ("metric", "attempt", "stall", "flight_recorder", "converge", "first")
        matcher = next((name for name in matchers if getattr(rule, name)), "silence")
        what = {
            "metric": "Prometheus series, not log lines",
            "attempt": "the scheduler's record of the attempt, not log lines",
            "silence": "the time a node's logs stop, not the lines themselves",
            "stall": "when the progress lines stop, not the lines themselves",
            "flight_recorder": "the attempt's PyTorch Flight Recorder dumps, not log lines",
            "converge": "the peers other rules' lines name, not the lines themselves",
            "first": "which node's line of other rules came first, not the lines themselves",
        }[matcher]
        return Verdict(rule, False, "matcher", f"a {matcher} rule: it reads {what}")
    mismatch = stream_mismatch(rule, kind, stream)
    if mismatch == "streams":
        reason = f"it looks at {_kinds(rule.kinds)} streams; this line is from a {kind} stream ({stream})"
        return Verdict(rule, False, "streams", reason, beyond=beyond)
    if mismatch == "files":
        reason = f"it looks only at streams named {', '.join(rule.names)}; this one is {stream!r}"
        return Verdict(rule, False, "files", reason, beyond=beyond)
    failed_filter: Verdict | None = None
    for pattern in line_patterns(rule):
        tested = pattern.test(parsed.message, job_id)
        if tested is None:
            continue
        captures, condition = tested
        if condition is None:
            return Verdict(rule, True, captures=captures, pattern=pattern.text, beyond=beyond)
        failed_filter = failed_filter or Verdict(
            rule, False, "where", _filter_reason(condition, captures, job_id), captures, pattern.text, beyond
        )
    if failed_filter is not None:
        return failed_filter
    return Verdict(rule, False, "pattern", _pattern_reason(rule, parsed), beyond=beyond)


def _kinds(kinds) -> str:
    names = sorted(kinds)
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def _pattern_reason(rule: Rule, parsed: Parsed) -> str:
    several = len(rule.patterns) > 1
    reason = f"{'none of its patterns matches' if several else 'its pattern does not match'} the message"
    stripped = [
        label
        for label, present in (("rank prefix", parsed.rank is not None), ("timestamp", parsed.time or parsed.uptime))
        if present
    ]
    if parsed.host:
        stripped.append(f"host {parsed.host!r}")
    if stripped:
        reason += f" (the line after its {', '.join(stripped)})"
    return reason


def _filter_reason(condition: Filter, captures: dict[str, str], job_id: str) -> str:
    raw = captures.get(condition.name)
    wanted = condition.value.pattern if hasattr(condition.value, "pattern") else condition.value
    if condition.op == "same_job":
        return f"where.{condition.name}: the captured job {raw!r} is not this attempt's job {job_id!r}"
    if raw is None:
        return f"where.{condition.name} {condition.op} {wanted!r}: the pattern matched but captured no {condition.name}"
    return f"where.{condition.name} {condition.op} {wanted!r}: the line's {condition.name} is {raw!r}"


def _beyond(rule: Rule) -> tuple[str, ...]:
    """What else the rule needs that one line cannot show."""
    notes = []
    if rule.count:
        notes.append(
            f"count: at least {rule.count.minimum} on {rule.count.nodes} node(s) within {rule.count.within:g} s"
        )
    if rule.solo:
        notes.append("solo: only without the events its 'solo' selection names around it")
    if rule.not_solo:
        notes.append("not_solo: only with the events its 'not_solo' selection names around it")
    return tuple(notes)
