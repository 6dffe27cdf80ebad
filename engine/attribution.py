"""From events to an attribution: scope, conditions, explanation, ranking and the outcome.

1. Scope: events on hosts outside the attempt, or (for system logs, scheduler events and metrics)
   outside its window plus a margin, never become causes.
2. Conditions: count thresholds and solo / not-solo conditions drop events whose rule does not hold.
3. Explanation: a cause explains the events its ``explains`` (cascade) and ``suppresses`` (teardown)
   select. An event explained by a cause of another classification is not a root of its own; when
   two classifications explain each other, the higher-ranked one wins.
4. Candidates: the unexplained causes, one per classification (domain, subdomain). A candidate that
   starts more than ``late_window`` after the first one is a consequence, not the root.
5. Ranking: precedence, then earliest time, then explained events, then a stable tie-break.
   Candidates whose precedence is within ``ambiguity_precedence`` of the top one and whose start is
   closer than ``ambiguity_window`` cannot be ranked apart: the
   outcome is ``ambiguous``. With no candidate it is ``unattributed``.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field

from engine.context import Attempt
from engine.events import Event
from engine.ruleset import RuleSet, Selector

INFINITY = float("inf")


@dataclass
class Candidate:
    domain: str
    subdomain: str
    events: list[Event]  # unexplained cause events of this classification, in time order
    explained: int = 0  # events this candidate's causes explain
    nodes: list[str] = field(default_factory=list)

    @property
    def nominated(self) -> bool:
        """Only hedged lines (``hint``) name this cause, none corroborated: it is a candidate, never the root alone."""
        return all(e.hint for e in self.events)

    @property
    def precedence(self) -> int:
        return max(e.rule.precedence for e in self.events)

    @property
    def first(self) -> float:
        """When the cause began, as reported: the exact start, else the earliest time its events give."""
        if self.exact:
            return self.bounds[0]
        return min((e.time for e in self.events if e.time is not None), default=INFINITY)

    @property
    def bounds(self) -> tuple[float, float]:
        """The interval in which the cause began: no later than its earliest event could have been, no earlier
        than the earliest bound of any of its events (a metric sample only bounds when a change happened)."""
        return min(e.low for e in self.events), min(e.high for e in self.events)

    @property
    def exact(self) -> bool:
        """Is the start known to the second: an exact event no other event may precede?"""
        low, high = self.bounds
        return low == high and any(e.exact and e.time == low for e in self.events)

    @property
    def origin(self) -> Event:
        """The event the cause began with: its earliest by time, then by position in its stream."""
        return min(self.events, key=Event.sort_key)

    @property
    def lead(self) -> Event:
        """The event that names the cause: highest precedence, then earliest."""
        return min(self.events, key=lambda e: (-e.rule.precedence, *e.sort_key()))

    def rank_key(self) -> tuple:
        origin = self.origin
        return (
            -self.precedence, self.first, -self.explained, origin.ref_path(), origin.ref_line(),
            self.domain, self.subdomain, tuple(self.nodes),
        )  # fmt: skip


@dataclass
class Attribution:
    outcome: str
    candidates: list[Candidate]  # the root first; several when ambiguous
    events: list[Event]  # every event in scope that survived the conditions, in time order


def attribute(
    events: list[Event], attempt: Attempt, ruleset: RuleSet, covered: Mapping[str, set[str]] | None = None
) -> Attribution:
    """``covered``: the nodes whose logs of each stream kind were read (for ``local: {alone: true}``)."""
    settings = ruleset.settings
    start, end = attempt.start.timestamp(), attempt.end.timestamp()
    nodes = set(attempt.nodes) | _named_hosts(events)
    low, high = start - settings.scope_margin, end + settings.scope_margin
    for event in events:
        _bound(event, start, end)
    scoped = sorted((e for e in events if _in_scope(e, nodes, low, high)), key=Event.sort_key)
    scoped = _apply_conditions(scoped)
    _corroborate(scoped)

    by_rule: dict[str, list[Event]] = defaultdict(list)
    for event in scoped:
        by_rule[event.rule.id].append(event)
    causes = [e for e in scoped if e.rule.role == "cause"]
    explains = _explanations(causes, by_rule, ruleset)

    groups: dict[tuple[str, str], list[Event]] = defaultdict(list)
    for event in causes:
        groups[event.rule.classification].append(event)
    group_rank = {key: _group_key(key, members) for key, members in groups.items()}

    explained_by: dict[Event, tuple[Event, str]] = {}
    for explainer, targets in explains.items():
        for target, mode in targets:
            if (
                target in explained_by
                or target.rule.role == "cause"
                and _loses_to(target, explainer, explains, group_rank)
            ):
                continue
            explained_by[target] = (explainer, mode)
    for event in scoped:
        if event in explained_by:
            _, mode = explained_by[event]
            event.role = mode if event.rule.role == "cause" else (event.rule.symptom_kind or mode)
        elif event.rule.role == "symptom":
            event.role = event.rule.symptom_kind
        elif event.rule.role == "context":
            event.role = "context"

    candidates = []
    for (domain, subdomain), members in sorted(groups.items()):
        alive = [e for e in members if e not in explained_by]
        if not alive:
            continue
        candidate = Candidate(domain, subdomain, alive)
        candidate.explained = sum(len(explains.get(e, ())) for e in members)
        candidate.nodes = _root_nodes(alive, attempt, covered or {}, by_rule, settings.ambiguity_window)
        candidates.append(candidate)
    candidates = _drop_late(candidates, settings.late_window)
    candidates.sort(key=Candidate.rank_key)
    if not candidates:
        return Attribution("unattributed", [], scoped)
    top = candidates[0]
    tied = [
        c
        for c in candidates[1:]
        if top.precedence - c.precedence <= settings.ambiguity_precedence
        and _apart(top, c) <= settings.ambiguity_window
        and c.nodes != top.nodes  # on the same nodes it is one fault seen twice: rank it
    ]
    chosen = [top, *tied] if tied else [top, *_alternatives(top)]
    if top.nominated:  # a guess: beside it stands the best established cause, if any
        established = next((c for c in candidates if not c.nominated), None)
        if established is not None and established not in chosen:
            chosen.append(established)
    for candidate in chosen:
        for event in candidate.events:
            event.role = "candidate" if len(chosen) > 1 or top.nominated else "root_cause"
    if len(chosen) > 1:
        return Attribution("ambiguous", chosen, scoped)
    return Attribution("unattributed" if top.nominated else "attributed", chosen, scoped)


def _alternatives(top: Candidate) -> list[Candidate]:
    """The other classifications every line of the top cause may equally mean (its rules' ``alternatives``):
    the log cannot separate them, so each is a candidate of its own, on the same lines and nodes."""
    common = set.intersection(*(set(e.rule.alternatives) for e in top.events)) - {(top.domain, top.subdomain)}
    return [Candidate(domain, subdomain, top.events, top.explained, top.nodes) for domain, subdomain in sorted(common)]


def _bound(event: Event, start: float, end: float) -> None:
    """Give every event an interval: an exact time is its own; an unknown bound is the attempt's window's."""
    if event.exact:
        event.low = event.high = event.time
        return
    if event.low is None:
        event.low = min(start, event.high) if event.high is not None else start
    if event.high is None:
        event.high = max(end, event.low)


def _named_hosts(events: list[Event]) -> set[str]:
    """Hosts the job's own words name as where it ran (``node_from``): a line of its own output, or a scheduler
    line or event about its own job (a ``same_job`` filter held; a daemon's log or the cluster's events name every
    host). The scheduler's text knows where the job ran even when the attempt's node list lacks the host (an
    elastic job, a requeue, a list written by hand)."""
    named = set()
    for event in events:
        rule = event.rule
        if not rule.node_from or event.node is None or rule.node_from not in event.captures:
            continue
        if event.kind == "app" or any(f.op == "same_job" and f.name in event.captures for f in rule.filters):
            named.add(event.node)
    return named


def _in_scope(event: Event, nodes: set[str], low: float, high: float) -> bool:
    if event.kind == "app":
        if not event.exact:
            return True  # the workload's own output, dated only by the lines around it
        if event.node is not None and event.node not in nodes:
            return low <= event.time <= high  # a host the workload itself names (a redacted or unlisted one)
    if event.node is not None and event.node not in nodes:
        return False
    return event.high >= low and event.low <= high


def _apart(first: Candidate, other: Candidate) -> float:
    """How far apart two candidates began at least (0 when their intervals overlap). Two inexact causes on
    the same stream are ordered by their lines: they are never simultaneous."""
    if not (first.exact or other.exact) and first.origin.ref_path() == other.origin.ref_path():
        return INFINITY
    (a_low, a_high), (b_low, b_high) = first.bounds, other.bounds
    return max(0.0, b_low - a_high, a_low - b_high)


def _apply_conditions(events: list[Event]) -> list[Event]:
    """Drop events whose rule's count threshold or solo / not-solo condition does not hold."""
    by_rule: dict[str, list[Event]] = defaultdict(list)
    for event in events:
        by_rule[event.rule.id].append(event)
    dropped: set[Event] = set()
    for members in by_rule.values():
        count = members[0].rule.count
        if count is None:
            continue
        buckets: dict[str | None, list[Event]] = defaultdict(list)
        for event in members:
            buckets[event.node if count.scope == "node" else None].append(event)
        for bucket in buckets.values():
            if not _reaches(bucket, count.minimum, count.nodes, count.within):
                dropped.update(bucket)
    for event in events:
        rule = event.rule
        if any(_any_near(event, selector, events, by_rule) for selector in rule.solo):
            dropped.add(event)
        if not all(_any_near(event, selector, events, by_rule) for selector in rule.not_solo):
            dropped.add(event)
    return [e for e in events if e not in dropped]


def _reaches(events: list[Event], minimum: int, nodes: int, within: float) -> bool:
    """True when some window of ``within`` seconds holds ``minimum`` occurrences on ``nodes`` distinct nodes."""
    timed = sorted(((e.time, e.count, e.node) for e in events if e.time is not None), key=lambda t: t[:2])
    if not timed:
        return sum(e.count for e in events) >= minimum and len({e.node for e in events}) >= nodes
    total, left = 0, 0
    for right, (time, count, _) in enumerate(timed):
        total += count
        while time - timed[left][0] > within:
            total -= timed[left][1]
            left += 1
        if total >= minimum and len({node for _, _, node in timed[left : right + 1]}) >= nodes:
            return True
    return False


def _any_near(event: Event, selector: Selector, events: list[Event], by_rule) -> bool:
    for other in _selected(selector, by_rule):
        if other is event:
            continue
        if selector.scope == "node" and other.node != event.node:
            continue
        if selector.in_window(event.low, event.high, other.low, other.high):
            return True
    return False


def _selected(selector: Selector, by_rule: dict[str, list[Event]]):
    for members in by_rule.values():
        if selector.selects(members[0].rule):
            yield from members


def _corroborate(events: list[Event]) -> None:
    """A hint becomes a cause when an event its rule's ``corroboration`` names lies near it."""
    by_rule: dict[str, list[Event]] = defaultdict(list)
    for event in events:
        by_rule[event.rule.id].append(event)
    for event in events:
        if event.hint and any(_any_near(event, s, events, by_rule) for s in event.rule.corroboration):
            event.hint = False


def _explanations(causes: list[Event], by_rule, ruleset: RuleSet) -> dict[Event, list[tuple[Event, str]]]:
    """For each cause, the events it explains and how (cascade or teardown). A hint not corroborated explains
    symptoms only: a guess never hides a cause the log states."""
    out: dict[Event, list[tuple[Event, str]]] = {}
    for cause in causes:
        found = []
        relations = [(s, "cascade") for s in cause.rule.explains] + [(s, "teardown") for s in cause.rule.suppresses]
        for selector, mode in relations:
            for other in _selected(selector, by_rule):
                if other is cause or cause.hint and other.rule.role == "cause":
                    continue
                if selector.scope == "node" and (other.node is None or other.node != cause.node):
                    continue
                if not selector.in_window(cause.low, cause.high, other.low, other.high):
                    continue
                found.append((other, mode))
        if found:
            out[cause] = found
    return out


def _group_key(classification: tuple[str, str], members: list[Event]) -> tuple:
    first = min((e.time for e in members if e.time is not None), default=INFINITY)
    return (-max(e.rule.precedence for e in members), first, classification)


def _loses_to(target: Event, explainer: Event, explains, group_rank) -> bool:
    """True when ``target`` must not be explained by ``explainer``: same classification, or the
    target's classification explains the explainer's and ranks higher (mutual explanation)."""
    target_group, explainer_group = target.rule.classification, explainer.rule.classification
    if target_group == explainer_group:
        return True
    if group_rank[target_group] >= group_rank[explainer_group]:
        return False
    return any(
        other is explainer for cause, targets in explains.items() if cause.rule.classification == target_group
        for other, _ in targets
    )  # fmt: skip


def _root_nodes(
    events: list[Event], attempt: Attempt, covered: Mapping[str, set[str]], by_rule, window: float
) -> list[str]:
    """The cause's nodes: those of its most telling events (highest precedence that names a node).

    The rule's scope decides whether the cause is a node's at all (docs/rules.md, "Scope"): a ``job`` rule's cause
    belongs to the whole job (no nodes); an ``auto`` rule's belongs to its node only where ``local`` holds. The
    same cause on every node belongs to the job too; on some nodes, to the one that showed it first by a clear
    margin (the others followed it), else to all of them.
    """
    if any(e.rule.nodes == "job" for e in events):
        return []
    spread = {e.rule.id: {x.node for x in events if x.rule is e.rule} for e in events if e.rule.nodes == "auto"}
    named = [
        e for e in events if e.rule.nodes == "node" or e.rule.nodes == "auto" and _local(e, spread, covered, by_rule)
    ]
    if not named:
        return []
    telling: list[Event] = []
    for precedence in sorted({e.rule.precedence for e in named}, reverse=True):
        telling = [e for e in named if e.node is not None and e.rule.precedence == precedence]
        if telling:
            break
    nodes = sorted({e.node for e in telling})
    if len(attempt.nodes) > 1 and set(nodes) >= set(attempt.nodes):
        return []
    return _first_node(telling, window) or nodes


def _first_node(events: list[Event], window: float) -> list[str]:
    """When the same cause shows on several nodes, each at an exact time, and one node's first line comes more than
    ``window`` before any other node's: that node alone (the others followed it). Else nothing is decided."""
    first: dict[str, float] = {}
    for event in events:
        if not event.exact:
            return []
        first[event.node] = min(first.get(event.node, event.time), event.time)
    if len(first) < 2:
        return []
    ordered = sorted(first.items(), key=lambda item: (item[1], item[0]))
    return [ordered[0][0]] if ordered[1][1] - ordered[0][1] > window else []


def _local(event: Event, spread: dict[str, set], covered: Mapping[str, set[str]], by_rule) -> bool:
    """Is the evidence of an ``auto`` rule's event node-local: a capture it has passes its filter in ``local.where``
    (a path on a node-local disk), or (``alone``) its
    node alone reported it while another node's logs of the same kind were read?"""
    local = event.rule.local
    if any(f.name in event.captures and f.accepts(event.captures) for f in local.where):
        return True
    for selector in local.context:  # the latest such line of its node (or of the job's own output) near it
        near = [
            other
            for other in _selected(selector, by_rule)
            if other.node in (event.node, None) and selector.in_window(event.low, event.high, other.low, other.high)
        ]
        if near and any(f.name in near[-1].captures and f.accepts(near[-1].captures) for f in local.where):
            near[-1].role = near[-1].role or "context"  # shown in the evidence: it made the cause the node's
            return True
    if local.alone and event.node is not None and spread[event.rule.id] == {event.node}:
        return bool(covered.get(event.kind, set()) - {event.node})
    return False


def _drop_late(candidates: list[Candidate], late_window: float) -> list[Candidate]:
    """Drop the candidates that began more than ``late_window`` after the first one: after the earliest
    exact start, judged by each candidate's earliest possible start (an inexact time counts by its
    interval, so a cause that may have begun in time is kept)."""
    known = [c.first for c in candidates if c.exact]
    if not known:
        return candidates
    first = min(known)
    return [c for c in candidates if c.bounds[0] - first <= late_window]
