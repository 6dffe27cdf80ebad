"""The rule model: what a loaded rule set is made of. ``loader.py`` builds these from YAML.

Rules are data. Nothing in a rule is executed: patterns are RE2 expressions (linear time, no
backtracking), filters and conditions are a fixed set of comparisons, summaries are ``{name}``
templates filled with captures.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

ROLES = ("cause", "symptom", "context", "progress", "note")
SYMPTOM_KINDS = ("cascade", "teardown")
SCOPES = ("node", "any")
NODE_MODES = ("node", "job", "auto", "event")  # "event": the first spelling of "node"


@dataclass(frozen=True)
class Selector:
    """Events a relation points at: by rule id or tag, in a time window around the event, on its node or any."""

    rules: frozenset[str]
    tags: frozenset[str]
    within: float  # seconds after the event
    before: float  # seconds before the event (clocks of different logs disagree a little)
    scope: str  # node | any

    def selects(self, rule: Rule) -> bool:
        return rule.id in self.rules or not self.tags.isdisjoint(rule.tags)

    def in_window(self, origin_low: float, origin_high: float, other_low: float, other_high: float) -> bool:
        """May an event in [other_low, other_high] lie within [origin - before, origin + within] of an event in
        [origin_low, origin_high]? (For exact times the intervals are points.)"""
        return other_high >= origin_low - self.before and other_low <= origin_high + self.within


@dataclass(frozen=True)
class Filter:
    """A comparison on one capture (or metric label/value): ``xid in [48, 63]``, ``value > 90``.

    ``same_job: true`` holds when the capture names the attempt's own job (or one of its steps or array
    tasks): shared scheduler logs hold lines of other jobs too.
    """

    name: str
    op: str  # in | not_in | equals | not_equals | matches | not_matches | gt | gte | lt | lte | same_job
    value: object

    def accepts(self, captures: dict[str, str], job_id: str = "") -> bool:
        raw = captures.get(self.name)
        if raw is None:
            return self.op in ("not_in", "not_equals", "not_matches")
        if self.op == "same_job":
            if not job_id:
                return True  # without the attempt's job id nothing can be excluded
            same = raw == job_id or raw.startswith((f"{job_id}.", f"{job_id}_"))
            return same == bool(self.value)
        if self.op in ("in", "not_in"):
            found = any(_same(raw, item) for item in self.value)
            return found if self.op == "in" else not found
        if self.op == "equals":
            return _same(raw, self.value)
        if self.op == "not_equals":
            return not _same(raw, self.value)
        if self.op == "matches":
            return self.value.search(raw) is not None
        if self.op == "not_matches":
            return self.value.search(raw) is None
        number = _number(raw)
        if number is None:
            return False
        return {
            "gt": number > self.value,
            "gte": number >= self.value,
            "lt": number < self.value,
            "lte": number <= self.value,
        }[self.op]


def _number(text: str) -> float | None:
    try:
        return float(int(text, 0)) if text.lower().startswith("0x") else float(text)
    except ValueError:
        return None


def _same(raw: str, expected: object) -> bool:
    if isinstance(expected, bool):
        return raw.lower() == str(expected).lower()
    if isinstance(expected, int | float):
        return _number(raw) == float(expected)
    return raw == str(expected)


@dataclass(frozen=True)
class LabelMatcher:
    name: str
    op: str  # = | != | =~ | !~
    value: str
    regex: object = None

    def accepts(self, labels: dict[str, str]) -> bool:
        actual = labels.get(self.name, "")
        if self.op == "=":
            return actual == self.value
        if self.op == "!=":
            return actual != self.value
        full = self.regex.fullmatch(actual) is not None
        return full if self.op == "=~" else not full


@dataclass(frozen=True)
class MetricCondition:
    """``series`` with label matchers, and a condition over the attempt's window.

    ``increase > N`` (a counter grew by more than N), ``changes`` (a gauge took a new value: one event
    per change, capture ``value``), ``max > N`` / ``min < N`` (first sample past the threshold).
    """

    series: str
    labels: tuple[LabelMatcher, ...]
    function: str  # increase | changes | max | min
    op: str | None
    threshold: float | None
    series_regex: object = None  # set when ``series`` is written "~REGEX"

    def selects(self, name: str, labels: dict[str, str]) -> bool:
        if self.series_regex is not None:
            if self.series_regex.fullmatch(name) is None:
                return False
        elif name != self.series:
            return False
        return all(m.accepts(labels) for m in self.labels)

    def compare(self, value: float) -> bool:
        if self.op is None:
            return True
        return {
            ">": value > self.threshold,
            ">=": value >= self.threshold,
            "<": value < self.threshold,
            "<=": value <= self.threshold,
            "==": value == self.threshold,
            "!=": value != self.threshold,
        }[self.op]


@dataclass(frozen=True)
class AttemptCondition:
    """A condition on the scheduler's record: final state, exit code, reason, scheduler kind."""

    states: frozenset[str]
    exit_codes: frozenset[str]
    reason: object  # compiled RE2 or None
    schedulers: frozenset[str]

    def accepts(self, attempt) -> bool:
        if self.states and attempt.state.upper() not in self.states:
            return False
        if self.exit_codes and attempt.exit_code not in self.exit_codes:
            return False
        if self.schedulers and attempt.scheduler not in self.schedulers:
            return False
        return self.reason is None or self.reason.search(attempt.reason or "") is not None


@dataclass(frozen=True)
class SilenceCondition:
    """A node whose logs of ``kinds`` stop ``min_gap`` seconds or more before the other nodes' logs."""

    kinds: frozenset[str]
    min_gap: float


@dataclass(frozen=True)
class StallCondition:
    """The job's progress stopped: the last line of the ``progress`` rules lies ``min_gap`` (the floor) and ``cadence``
    times the job's own pace (the usual interval between its progress lines) or more before the attempt's end; with
    ``final``, that last line is one ``final`` selects (the job said it was done, then never ended)."""

    progress: Selector
    min_gap: float
    cadence: float = 3.0
    final: Selector | None = None  # the last progress line must be one of these (a completion line: a teardown hang)


@dataclass(frozen=True)
class FlightRecorderCondition:
    """Findings of the analysis of the attempt's PyTorch Flight Recorder dumps (``engine.flight_recorder``) of the
    ``findings`` kinds: never_enqueued, not_started, mismatch, missing_dump. One event per finding and node."""

    findings: frozenset[str]


@dataclass(frozen=True)
class ConvergeCondition:
    """The errors of at least ``reporters`` nodes (fewer when the attempt has fewer other nodes) name one peer, and
    more of them name it than any other: the lines ``pointers`` selects, through their rule's ``points_at``."""

    pointers: Selector
    reporters: int = 2


@dataclass(frozen=True)
class HistoryCondition:
    """A line of the ``symptoms`` selection on a node that the bundle's history (``history/nodes.json``) shows with a
    verdict of record in one of the ``domains``, of an attempt that ended at most ``within`` seconds before this one
    started: that node is nominated (docs/rules.md, "History")."""

    symptoms: Selector
    domains: frozenset[str]
    within: float = 14 * 86400.0


@dataclass(frozen=True)
class FirstCondition:
    """The node whose line of the ``events`` selection (passing the rule's ``where``) came first, at an exact time,
    more than ``margin`` before any other node's: where the failure began (torchrun's first failed worker)."""

    events: Selector
    margin: float = 60.0


@dataclass(frozen=True)
class CountThreshold:
    """At least ``minimum`` occurrences (and events on ``nodes`` distinct nodes) within ``within`` seconds."""

    minimum: int
    within: float
    scope: str
    nodes: int = 1


@dataclass(frozen=True)
class Locality:
    """When a cause of ``nodes: auto`` is its node's rather than the job's: one of its events has a capture that
    passes its filter in ``where`` (a path on a node-local disk), as does one of an event ``context`` selects near it
    (the line where the job announced the save that failed), or (``alone``) one node alone reported
    it while other nodes' logs of the same kind were read and show nothing of it (one node's mount, not the
    shared file system)."""

    where: tuple[Filter, ...] = ()
    alone: bool = False
    context: tuple[Selector, ...] = ()  # events near it whose captures ``where`` also reads (the path a save announced)


@dataclass(frozen=True, eq=False)
class Rule:
    id: str
    description: str
    role: str
    file: str
    line: int
    sources: tuple[str, ...] = ()
    kinds: frozenset[str] = frozenset()
    names: tuple[str, ...] = ()  # stream-name globs; empty means every stream of the kinds
    patterns: tuple[str, ...] = ()  # the firm patterns, then the ``hint`` patterns
    compiled: tuple[object, ...] = ()
    hints: int = 0  # how many of the last patterns are hints (hedged wordings): they nominate, never attribute
    corroboration: tuple[Selector, ...] = ()  # events any one of which near a hint makes it a cause
    filters: tuple[Filter, ...] = ()
    metric: MetricCondition | None = None
    attempt: AttemptCondition | None = None
    silence: SilenceCondition | None = None
    stall: StallCondition | None = None
    flight_recorder: FlightRecorderCondition | None = None
    converge: ConvergeCondition | None = None
    first: FirstCondition | None = None
    history: HistoryCondition | None = None
    points_at: str | None = None  # the capture naming the peer (a host or an address) a line blames
    symptom_kind: str | None = None  # cascade | teardown (symptoms only)
    domain: str | None = None
    subdomain: str | None = None
    alternatives: tuple[tuple[str, str], ...] = ()  # other classifications the same line may equally mean
    action: str | None = None
    precedence: int = 50
    summary: str = ""
    nodes: str = "node"  # the cause's scope: node | job | auto (the node's when ``local`` holds, else the job's)
    local: Locality | None = None  # with nodes: auto, what makes the evidence node-local
    node_from: str | None = None
    tags: frozenset[str] = frozenset()
    explains: tuple[Selector, ...] = ()
    suppresses: tuple[Selector, ...] = ()
    count: CountThreshold | None = None
    solo: tuple[Selector, ...] = ()  # every selection must be absent around the event
    not_solo: tuple[Selector, ...] = ()  # every selection must be present around the event
    fields: dict[str, int] = field(default_factory=dict)  # field name -> line, for error messages

    @property
    def classification(self) -> tuple[str, str]:
        return (self.domain or "", self.subdomain or "")


@dataclass(frozen=True)
class Settings:
    """Engine settings a rule set may change (``settings:`` in any rule file)."""

    scope_margin: float = 300.0  # seconds around the attempt's window in which system events count
    ambiguity_window: float = 5.0  # causes of (about) equal precedence this close cannot be ranked apart
    ambiguity_precedence: int = 5  # "about equal": this far below the top cause's precedence, at most
    late_window: float = 900.0  # a cause starting this long after the first cause is not the root
    evidence_cap: int = 40
    symptom_evidence_per_rule: int = 3
    context_cap: int = 10
    text_cap: int = 500


@dataclass(frozen=True, eq=False)
class RuleSet:
    name: str
    version: str
    digest: str
    rules: tuple[Rule, ...]
    settings: Settings = Settings()

    def by_id(self) -> dict[str, Rule]:
        return {rule.id: rule for rule in self.rules}


_TEMPLATE = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


def render(template: str, values: dict[str, str]) -> str:
    """Fill ``{name}`` placeholders from ``values``; unknown names stay as written. Never evaluates anything."""
    return _TEMPLATE.sub(lambda m: values.get(m.group(1), m.group(0)), template)
