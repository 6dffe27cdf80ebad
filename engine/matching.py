"""The one step that checks a rule against one line: where it looks, its patterns, the filters on their captures.

The extraction of log lines (``engine.streams``), of scheduler events (``engine.records``) and the rule
explorer (``workbench.explorer``) all call it, so "why does this line (not) match" can never disagree with
what the engine does.
"""

from __future__ import annotations

import fnmatch
import weakref
from dataclasses import dataclass

from engine.ruleset import Filter, Rule


@dataclass(frozen=True, slots=True)
class LinePattern:
    """One pattern of one rule (its ``index`` among the rule's patterns), with the rule's filters that apply to it:
    those on the captures it defines (a rule may mix a pattern that captures an Xid number and one that does not)."""

    rule: Rule
    index: int
    regex: object
    filters: tuple[Filter, ...]
    hint: bool = False  # one of the rule's ``hint`` patterns

    @property
    def text(self) -> str:
        return self.rule.patterns[self.index]

    def test(self, message: str, job_id: str = "") -> tuple[dict[str, str], Filter | None] | None:
        """None when the pattern does not match ``message`` (a line after its prefixes and stamp, or a scheduler
        event's ``Reason: message``); else its captures and the first filter that rejects them (None: a match)."""
        match = self.regex.search(message)
        if match is None:
            return None
        captures = {k: v for k, v in match.groupdict().items() if v is not None}
        for condition in self.filters:
            if not condition.accepts(captures, job_id):
                return captures, condition
        return captures, None


_PATTERNS: weakref.WeakKeyDictionary[Rule, tuple[LinePattern, ...]] = weakref.WeakKeyDictionary()


def line_patterns(rule: Rule) -> tuple[LinePattern, ...]:
    """The rule's patterns in order, each with its filters (built once per rule)."""
    patterns = _PATTERNS.get(rule)
    if patterns is None:
        patterns = _PATTERNS[rule] = _build(rule)
    return patterns


def _build(rule: Rule) -> tuple[LinePattern, ...]:
    return tuple(
        LinePattern(
            rule,
            index,
            regex,
            tuple(f for f in rule.filters if f.name in regex.groupindex),
            hint=index >= len(rule.compiled) - rule.hints,
        )  # fmt: skip
        for index, regex in enumerate(rule.compiled)
    )


def match_line(rule: Rule, message: str, job_id: str = "") -> tuple[LinePattern, dict[str, str]] | None:
    """The first of the rule's patterns that matches ``message`` with its filters passing, and its captures."""
    for pattern in line_patterns(rule):
        tested = pattern.test(message, job_id)
        if tested is not None and tested[1] is None:
            return pattern, tested[0]
    return None


def stream_mismatch(rule: Rule, kind: str, stream: str) -> str | None:
    """Why the rule does not look at a stream of that kind and name (``streams`` or ``files``), or None."""
    if kind not in rule.kinds:
        return "streams"
    if rule.names and not any(fnmatch.fnmatchcase(stream, glob) for glob in rule.names):
        return "files"
    return None


def event_node(rule: Rule, captures: dict[str, str], node: str | None, canonical) -> str | None:
    """The node an event is about: the capture ``node_from`` names (a host the line speaks of), else the node
    the line was placed on. ``canonical`` maps a name to the attempt's node name."""
    if rule.node_from:
        return canonical(captures.get(rule.node_from)) or node
    return node
