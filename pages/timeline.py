"""The attempt timeline's layout: one swimlane per node, events as marks, scheduler transitions as
markers. Pure geometry: events in, positions out; the template draws the SVG.

Marks of one role that fall within a few pixels of each other on a lane are drawn as one mark that
counts them (800,000 copies of one Xid line are one mark). Attempts of ``FULL_LANES`` nodes or more
show only the interesting nodes (root cause, candidates, evidence, then the earliest causes and
cascades) and collapse the rest into one counted lane. Lanes are ordered by what they hold: the root
cause's first, then the candidates', then the rest (symptoms and context), each group in the attempt's
node order; the collapsed lane comes last.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from operator import itemgetter
from typing import NamedTuple

WIDTH = 1000
LABEL_WIDTH = 190  # node names on the left
LABEL_CHARS = 25  # characters of a node name that fit there
BRIEF_CHARS = 17  # and in the larger type of a narrow timeline (pages: at most about 800 px wide)
PLOT_RIGHT = WIDTH - 12
AXIS_HEIGHT = 26
LANE_HEIGHT = 22
BUCKET = 4  # marks of one role closer than this (in x) on a lane are merged
FULL_LANES = 100  # from this many nodes on, only the interesting ones get a lane
INTERESTING_LANES = 24
ROLE_ORDER = ("context", "teardown", "cascade", "candidate", "root_cause")  # drawing order: causes on top
ONE_SECOND = timedelta(seconds=1)
TICK_STEPS = [
    timedelta(seconds=s)
    for s in (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400, 604800)
]


class Event(NamedTuple):
    """What the timeline needs of a node event (``NodeEvent`` rows are adapted to this; a tuple, since a large attempt
    has tens of thousands of them)."""

    node: str | None
    time: datetime | None
    role: str
    rule: str
    text: str
    ref: str
    count: int
    kind: str
    pk: int | None = None  # the NodeEvent row
    approx: bool = False  # the line has no time of its own: ``time`` is the earliest bound of [low, high]
    low: datetime | None = None
    high: datetime | None = None

    @property
    def at(self) -> datetime | None:
        """Where it is drawn: its time, or for an approximate one known only by its bounds, the earliest bound."""
        return self.time or self.low or self.high


@dataclass
class Mark:
    x: float
    role: str
    count: int  # events merged into this mark (their counts summed)
    time: datetime
    rule: str
    text: str  # the first event's line
    ref: str
    evidence: int | None = None  # the evidence row showing this line, if any
    event: int | None = None  # the first event's row (its line in the bundle, when no evidence row shows it)
    approx: bool = False  # drawn as the interval [low, high] its lines lie in
    low: datetime | None = None
    high: datetime | None = None
    x_low: float = 0
    x_high: float = 0

    @property
    def label(self) -> str:
        """The mark's accessible name (times in UTC, as the axis)."""
        what = self.role.replace("_", " ")
        more = f" (and {self.count - 1} more)" if self.count > 1 else ""
        return f"{what}: {self.rule} {self.when}{more}"

    @property
    def when(self) -> str:
        """When its lines were written, one clock time or one interval: ``at 10:14:07 UTC``; approximate,
        ``between 10:14:07 and 10:15:00 UTC (approximate)``, or ``at about 10:14:07 UTC`` when its interval is that
        second (a bound no line gives is the drawn time: ``low`` and ``high`` are always set)."""
        if not self.approx:
            return f"at {self.time:%H:%M:%S} UTC"
        low, high = f"{self.low:%H:%M:%S}", f"{self.high:%H:%M:%S}"
        return f"between {low} and {high} UTC (approximate)" if low != high else f"at about {low} UTC"

    @property
    def span_from(self) -> float:
        """Where an approximate mark's interval begins, relative to the mark."""
        return round(self.x_low - self.x, 2)

    @property
    def span_width(self) -> float:
        return round(max(self.x_high - self.x_low, 2), 2)

    @property
    def spans(self) -> bool:
        """Whether it is drawn with its interval: approximate, over more than one second."""
        return self.approx and self.high - self.low >= ONE_SECOND


@dataclass
class Lane:
    name: str | None  # the node; None for the scheduler lane and the collapsed lane
    title: str
    y: float = 0
    root_cause: bool = False
    marks: list[Mark] = field(default_factory=list)
    brief_title: str = ""  # a shorter title for narrow timelines, where the middle-shortened one would not do

    @property
    def middle(self) -> float:
        return self.y + LANE_HEIGHT / 2

    @property
    def label(self) -> str:
        """The title shortened to fit the label column (a root cause's, bold and followed by ◆, shorter)."""
        return _shortened(self.title, LABEL_CHARS - 6 * self.root_cause)

    @property
    def brief(self) -> str:
        """The label of a narrow timeline, drawn in larger type (CSS chooses one of the two)."""
        return _shortened(self.brief_title or self.title, BRIEF_CHARS - 4 * self.root_cause)

    @property
    def rank(self) -> int:
        """Where the lane goes: 0 the root cause's, 1 a candidate's, 2 the rest."""
        roles = {mark.role for mark in self.marks}
        return 0 if self.root_cause or "root_cause" in roles else 1 if "candidate" in roles else 2


def _shortened(title: str, chars: int) -> str:
    """``title`` shortened in the middle (node names differ at their ends: ``pool-98346da9-5ada``)."""
    if len(title) <= chars:
        return title
    keep = chars - 1
    return f"{title[: keep // 2]}…{title[-(keep - keep // 2) :]}"


@dataclass(frozen=True)
class Marker:
    """A scheduler transition: the attempt's start and end, drawn across every lane."""

    x: float
    label: str
    time: datetime


@dataclass
class Timeline:
    start: datetime
    end: datetime
    lanes: list[Lane]
    markers: list[Marker]
    ticks: list[tuple[float, str]]
    collapsed: int  # nodes folded into the "other nodes" lane
    untimed: int  # events of which nothing dates even an interval (not drawn)
    width: int = WIDTH
    label_width: int = LABEL_WIDTH
    plot_right: int = PLOT_RIGHT
    axis_height: int = AXIS_HEIGHT
    lane_height: int = LANE_HEIGHT

    @property
    def height(self) -> float:
        return AXIS_HEIGHT + LANE_HEIGHT * len(self.lanes) + 6

    @property
    def axis_labels(self) -> list[tuple[float, str, str]]:
        """The ticks' (x, label, text-anchor): centred on their tick, but ending at it near the right edge."""
        return [(x, label, "end" if x > WIDTH - 50 else "middle") for x, label in self.ticks]


def layout(
    *,
    start: datetime,
    end: datetime,
    nodes: list[str],
    events: list[Event],
    root_cause_nodes: set[str],
    highlighted_nodes: set[str],
    evidence_refs: dict[str, int],
    transitions: list[tuple[datetime, str]],
    zoom: bool = False,
) -> Timeline:
    """Lay out the attempt's window ``start``..``end`` (with ``zoom``: the span of its events).

    ``highlighted_nodes`` (candidates, evidence nodes) always get a lane; ``evidence_refs`` maps a
    line's ref to the evidence row that shows it; ``transitions`` are the scheduler's (time, label).
    """
    timed = [(at, event) for event in events if (at := event.at) is not None]  # ``at`` read once per event
    if zoom and timed:
        first = min(at for at, _ in timed)
        last = max((event.high if event.approx and event.high else at) for at, event in timed)
        margin = max((last - first) / 20, timedelta(seconds=1))
        start, end = first - margin, last + margin
    else:
        start = min([start, *(at for at, _ in timed)])
        end = max([end, *(at for at, _ in timed)])
    span = max((end - start).total_seconds(), 1.0)
    places: dict[datetime, float] = {}  # events share times (a thousand nodes time out in the same seconds)

    def x_of(moment: datetime) -> float:
        x = places.get(moment)
        if x is None:
            x = places[moment] = round(
                LABEL_WIDTH + (moment - start).total_seconds() / span * (PLOT_RIGHT - LABEL_WIDTH), 2
            )
        return x

    by_node: dict[str | None, list[tuple[datetime, Event]]] = defaultdict(list)
    lanes_of = set(nodes)  # a set: thousands of events, each looked up among a thousand nodes
    for at, event in timed:
        if start <= at <= end:
            by_node[event.node if event.node in lanes_of else None].append((at, event))
    shown = _shown_nodes(nodes, by_node, root_cause_nodes | highlighted_nodes)
    lanes = []
    if by_node.get(None):
        lanes.append(Lane(name=None, title="scheduler and cluster events", brief_title="scheduler/cluster"))
    lanes += [Lane(name=name, title=name, root_cause=name in root_cause_nodes) for name in shown]
    shown_set = set(shown)
    hidden = [name for name in nodes if name not in shown_set]
    if hidden:
        lanes.append(Lane(name=None, title=f"{len(hidden)} other node{'s' * (len(hidden) != 1)}"))
    for lane in lanes:
        if lane.name is not None:
            members = by_node.get(lane.name, [])
        elif lane is lanes[-1] and hidden:
            members = [event for name in hidden for event in by_node.get(name, [])]
        else:
            members = by_node.get(None, [])
        lane.marks = _marks(members, x_of, evidence_refs)
    folded = lanes.pop() if hidden else None
    lanes.sort(key=lambda lane: lane.rank)  # stable: each group in node order, the scheduler's lane first
    lanes += [folded] if folded else []
    for index, lane in enumerate(lanes):
        lane.y = AXIS_HEIGHT + index * LANE_HEIGHT
    markers = [Marker(x_of(moment), label, moment) for moment, label in transitions if start <= moment <= end]
    return Timeline(
        start=start,
        end=end,
        lanes=lanes,
        markers=markers,
        ticks=[(x_of(moment), label) for moment, label in _ticks(start, end)],
        collapsed=len(hidden),
        untimed=len(events) - len(timed),
    )


def _shown_nodes(nodes: list[str], by_node: dict, always: set[str]) -> list[str]:
    """Every node, or for large attempts the interesting ones, in the attempt's node order."""
    if len(nodes) < FULL_LANES:
        return list(nodes)
    chosen = {name for name in nodes if name in always}
    causes = {"root_cause", "candidate"}
    chosen |= {name for name in nodes if any(event.role in causes for _, event in by_node.get(name, ()))}
    busy = sorted(
        (min(map(itemgetter(0), by_node[name])), name) for name in nodes if by_node.get(name) and name not in chosen
    )
    room = max(INTERESTING_LANES - len(chosen), 0)
    chosen |= {name for _, name in busy[:room]}
    return [name for name in nodes if name in chosen]


def _marks(events: list[tuple[datetime, Event]], x_of, evidence_refs: dict[str, int]) -> list[Mark]:
    """The lane's marks of its (time drawn, event) pairs, in any order: a mark shows its earliest line."""
    buckets: dict[tuple[int, str, bool], Mark] = {}
    for at, event in sorted(events, key=lambda pair: (pair[0], pair[1].ref, pair[1].pk)):
        x = x_of(at)
        key = (int(x // BUCKET), event.role, event.approx)
        mark = buckets.get(key)
        low = (event.low or at) if event.approx else at
        high = (event.high or at) if event.approx else at
        if mark is None:
            buckets[key] = Mark(
                x=x,
                role=event.role,
                count=event.count,
                time=at,
                rule=event.rule,
                text=event.text,
                ref=event.ref,
                evidence=evidence_refs.get(event.ref),
                event=event.pk,
                approx=event.approx,
                low=low,
                high=high,
            )
        else:
            mark.count += event.count
            if low < mark.low:
                mark.low = low
            if high > mark.high:
                mark.high = high
            if mark.evidence is None:
                mark.evidence = evidence_refs.get(event.ref)
    for mark in buckets.values():
        mark.x_low, mark.x_high = (min(max(x_of(moment), LABEL_WIDTH), PLOT_RIGHT) for moment in (mark.low, mark.high))
    rank = {role: index for index, role in enumerate(ROLE_ORDER)}
    return sorted(buckets.values(), key=lambda m: (rank.get(m.role, -1), m.x))


def _ticks(start: datetime, end: datetime) -> list[tuple[datetime, str]]:
    """About six round times across the window, labelled HH:MM:SS (with the date across days)."""
    span = end - start
    step = next((s for s in TICK_STEPS if span / s <= 7), TICK_STEPS[-1])
    seconds = step.total_seconds()
    first = datetime.fromtimestamp(-(-start.timestamp() // seconds) * seconds, tz=start.tzinfo)
    ticks = []
    moment = first
    while moment <= end:
        label = f"{moment:%b} {moment.day} {moment:%H:%M}" if step >= timedelta(hours=3) else f"{moment:%H:%M:%S}"
        ticks.append((moment, label))
        moment += step
    return ticks
