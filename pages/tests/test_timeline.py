"""The timeline's layout and the overview charts' geometry (pure: no database)."""

from datetime import UTC, date, datetime, timedelta

from pages import charts, timeline
from pages.timeline import Event

START = datetime(2026, 11, 2, 10, 0, tzinfo=UTC)


def event(node, seconds, role="cascade", ref=None, count=1, rule="nccl.watchdog_timeout"):
    time = None if seconds is None else START + timedelta(seconds=seconds)
    return Event(node, time, role, rule, f"line on {node}", ref or f"logs/{node}/x.log:{seconds}", count, "app")


def lay(nodes, events, **options):
    arguments = {
        "start": START,
        "end": START + timedelta(minutes=30),
        "nodes": nodes,
        "events": events,
        "root_cause_nodes": set(),
        "highlighted_nodes": set(),
        "evidence_refs": {},
        "transitions": [(START, "start"), (START + timedelta(minutes=30), "end: FAILED")],
        **options,
    }
    return timeline.layout(**arguments)


def test_one_lane_per_node_with_the_root_cause_marked():
    nodes = ["n1", "n2", "n3"]
    events = [event("n2", 240, "root_cause", ref="logs/n2/syslog.log:3"), event("n1", 840), event("n3", 840)]

    result = lay(nodes, events, root_cause_nodes={"n2"}, evidence_refs={"logs/n2/syslog.log:3": 17})

    assert [(lane.name, lane.root_cause) for lane in result.lanes] == [("n2", True), ("n1", False), ("n3", False)]
    [mark] = result.lanes[0].marks
    assert (mark.role, mark.evidence, mark.label) == (
        "root_cause",
        17,
        "root cause: nccl.watchdog_timeout at 10:04:00 UTC",
    )
    assert mark.x == timeline.LABEL_WIDTH + 240 / 1800 * (timeline.PLOT_RIGHT - timeline.LABEL_WIDTH)
    assert [marker.label for marker in result.markers] == ["start", "end: FAILED"]
    assert result.markers[0].x == timeline.LABEL_WIDTH
    assert result.markers[1].x == timeline.PLOT_RIGHT


def test_close_marks_of_one_role_merge_and_count_and_causes_are_drawn_last():
    events = [event("n1", 600 + i / 10, count=2) for i in range(50)] + [event("n1", 600, "root_cause")]

    [lane] = lay(["n1"], events).lanes

    assert [(mark.role, mark.count) for mark in lane.marks] == [("cascade", 100), ("root_cause", 1)]
    assert lane.marks[0].label.endswith("(and 99 more)")


def test_events_without_a_node_go_to_the_scheduler_lane_and_untimed_ones_are_counted():
    events = [event(None, 1799, "root_cause"), event("n1", None), event("n1", 10)]

    result = lay(["n1"], events)

    assert [lane.title for lane in result.lanes] == ["scheduler and cluster events", "n1"]
    assert (len(result.lanes[0].marks), result.untimed) == (1, 1)


def test_a_large_attempt_shows_the_interesting_nodes_and_counts_the_rest():
    nodes = [f"n{i:03d}" for i in range(256)]
    events = [event(name, 900 + i) for i, name in enumerate(nodes)] + [event("n200", 300, "root_cause")]

    result = lay(nodes, events, root_cause_nodes={"n200"}, highlighted_nodes={"n100"})

    names = [lane.name for lane in result.lanes]
    assert len(names) == timeline.INTERESTING_LANES + 1
    assert names[-1] is None
    assert result.lanes[-1].title == f"{result.collapsed} other nodes"
    assert {"n200", "n100", "n000", "n001"} <= set(names)
    assert names[0] == "n200"  # the root cause's lane first, whatever its place among the nodes
    assert result.collapsed == 256 - timeline.INTERESTING_LANES
    assert sum(mark.count for mark in result.lanes[-1].marks) == result.collapsed


def test_lanes_go_root_cause_first_then_candidates_then_symptoms_each_in_node_order():
    nodes = ["n1", "n2", "n3", "n4", "n5", "n6"]
    events = [event(name, 900) for name in nodes] + [
        event("n5", 300, "candidate"),
        event("n2", 301, "candidate"),
        event(None, 200, "context"),
        event("n6", 299, "root_cause"),
    ]

    result = lay(nodes, events, root_cause_nodes={"n6"}, highlighted_nodes={"n3"})

    assert [lane.name for lane in result.lanes] == ["n6", "n2", "n5", None, "n1", "n3", "n4"]
    assert [lane.y for lane in result.lanes] == [timeline.AXIS_HEIGHT + i * timeline.LANE_HEIGHT for i in range(7)]
    assert [lane.brief for lane in result.lanes][3] == "scheduler/cluster"


def test_zoom_keeps_the_events_and_ticks_are_round():
    events = [event("n1", 600), event("n1", 620)]

    whole, zoomed = lay(["n1"], events), lay(["n1"], events, zoom=True)

    assert [label for _, label in whole.ticks] == ["10:00:00", "10:05:00", "10:10:00", "10:15:00", "10:20:00",
                                                  "10:25:00", "10:30:00"]  # fmt: skip
    assert zoomed.start == START + timedelta(seconds=599)
    assert zoomed.end == START + timedelta(seconds=621)
    assert zoomed.markers == []
    assert [label for _, label in zoomed.ticks][:2] == ["10:10:00", "10:10:05"]


def test_stacked_bars_per_day():
    days = [date(2026, 11, 1) + timedelta(days=n) for n in range(7)]
    counts = {(days[0], "attributed"): 3, (days[0], "ambiguous"): 1, (days[6], "attributed"): 2}

    chart = charts.stacked_by_day(counts, days=days, series=["attributed", "ambiguous", "unattributed"])

    assert [(bar.series, bar.title) for bar in chart.bars] == [
        ("attributed", "2026-11-01: 3 attributed"),
        ("ambiguous", "2026-11-01: 1 ambiguous"),
        ("attributed", "2026-11-07: 2 attributed"),
    ]
    first, second = chart.bars[:2]
    assert first.y + first.height == chart.bottom
    assert second.y + second.height == first.y
    assert [tick.label for tick in chart.y_ticks] == ["0", "2", "4"]
    assert chart.legend == [("attributed", 5), ("ambiguous", 1)]
    assert chart.total == 6
    assert [tick.label for tick in chart.x_ticks] == [f"Nov {d.day}" for d in days]


def test_nice_ceiling():
    assert [charts.nice_ceiling(n) for n in (0, 1, 2, 3, 5, 11, 39, 41, 101)] == [2, 2, 2, 4, 10, 20, 40, 100, 200]


def test_long_node_names_are_shortened_in_the_middle():
    assert timeline.Lane(name="n", title="gke-ml-a3u-pool-98346da9-5ada").label == "gke-ml-a3u-p…8346da9-5ada"
    assert timeline.Lane(name="n", title="dgx-b200-0417").label == "dgx-b200-0417"
    assert timeline.Lane(name="n", title="gke-ml-a3u-pool-98346da9-5ada").brief == "gke-ml-a…da9-5ada"


def test_an_approximate_event_is_drawn_as_its_interval_and_never_merged_with_an_exact_one():
    low, high = START + timedelta(minutes=5), START + timedelta(minutes=8)
    approx = Event(
        "n1", None, "cascade", "nccl.watchdog_timeout", "no stamp", "logs/train.log:9", 1, "app", 4, True, low, high
    )
    result = lay(["n1"], [approx, event("n1", 300)], zoom=False)
    [exact, interval] = sorted(result.lanes[0].marks, key=lambda mark: mark.approx)
    assert not exact.approx
    assert interval.approx
    assert interval.x == exact.x
    assert interval.span_from == 0
    assert interval.span_width == round(interval.x_high - interval.x_low, 2) > 50
    assert interval.event == 4
    assert interval.evidence is None
    assert interval.label == "cascade: nccl.watchdog_timeout between 10:05:00 and 10:08:00 UTC (approximate)"
    assert interval.spans
    assert result.untimed == 0


def test_an_approximate_time_of_one_second_is_one_clock_time_and_no_interval():
    moment = START + timedelta(minutes=5, microseconds=300)
    point = Event("n1", moment, "cascade", "nccl.x", "no stamp", "logs/a.log:9", 1, "app", 4, True, moment, moment)
    [mark] = lay(["n1"], [point]).lanes[0].marks

    assert mark.label == "cascade: nccl.x at about 10:05:00 UTC"
    assert not mark.spans  # nothing of no width drawn as an interval
