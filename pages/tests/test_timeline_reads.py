"""The attempt timeline of a large attempt as the page reads and writes it: its events' times read as numbers
(``selectors.Microseconds``) give the events, and the timeline, that the rows read as models gave; the marks
written by ``lane_marks`` are the markup the template wrote (docs/performance.md, "Pages")."""

import sqlite3
from datetime import UTC, datetime, timedelta
from operator import attrgetter
from unittest import mock

import pytest
from django.db.backends.postgresql import psycopg_any
from django.template import Context, Template

from diagnoses.models import Evidence, Node, NodeEvent
from pages import selectors, timeline
from pages.templatetags.timelines import lane_marks
from pages.timeline import Event

NODES = tuple(f"node{i:03d}" for i in range(130))  # more than FULL_LANES: the uninteresting nodes are collapsed


@pytest.fixture
def large(make_bundle, store):
    """A 130-node attempt whose diagnosis also has, on every node, exact times (with microseconds), approximate ones
    (both bounds, the earliest only, the latest only), a line without any time, and scheduler lines (no node)."""
    attempt = store(make_bundle(nodes=NODES, faulty="node007"))
    diagnosis = attempt.current_diagnosis
    nodes = {node.name: node for node in Node.objects.filter(cluster=attempt.cluster)}
    base = make_bundle.start + timedelta(minutes=9)
    rows = []
    for index, name in enumerate(NODES):
        moment = base + timedelta(seconds=index % 7, microseconds=index * 1013)
        common = {"diagnosis": diagnosis, "node": nodes[name], "source": "train", "kind": "app", "role": "cascade"}
        text = '<Watchdog> & "timeout"'
        rows += [
            NodeEvent(**common, time=moment + timedelta(seconds=rank), rule="nccl.watchdog_timeout",
                      text=f"[rank{index * 3 + rank}]: {text}", ref=f"logs/train.log:{index}{rank}")
            for rank in range(3)
        ]  # fmt: skip
        low, high = moment - timedelta(seconds=40, microseconds=7), moment + timedelta(seconds=3)
        rows += [
            NodeEvent(**common, time=low, time_approx=True, time_low=low, time_high=high, rule="a.both",
                      text="between", ref=f"logs/{name}/a.log:1"),
            NodeEvent(**common, time=low, time_approx=True, time_low=low, rule="a.after", text="after",
                      ref=f"logs/{name}/a.log:2"),
            NodeEvent(**common, time=None, time_approx=True, time_high=high, rule="a.before", text="before",
                      ref=f"logs/{name}/a.log:3"),
            NodeEvent(**common, time=None, time_approx=True, rule="a.never", text="untimed",
                      ref=f"logs/{name}/a.log:4"),
        ]  # fmt: skip
    rows.append(NodeEvent(diagnosis=diagnosis, node=None, source="scheduler", kind="scheduler", role="context",
                          time=base, rule="slurm.state", text="job <ended>", ref="scheduler/sacct.json:1"))  # fmt: skip
    NodeEvent.objects.bulk_create(rows)
    return attempt


def events_read_as_models(diagnosis) -> list[Event]:
    """How the page read the events before: model rows, their times parsed by Django's loader."""
    rows = NodeEvent.objects.filter(diagnosis=diagnosis).select_related("node").order_by("time", "pk")
    return [
        Event(row.node.name if row.node else None, row.time, row.role, row.rule, row.text, row.ref, row.count,
              row.kind, row.pk, row.time_approx, row.time_low, row.time_high)
        for row in rows
    ]  # fmt: skip


def lay(attempt, events, zoom=True):
    evidence = selectors.evidence_trail(attempt.current_diagnosis)
    return timeline.layout(
        start=attempt.start,
        end=attempt.end,
        nodes=selectors.attempt_node_names(attempt),
        events=events,
        root_cause_nodes={"node007"},
        highlighted_nodes={item.node.name for item in evidence if item.node is not None},
        evidence_refs={item.ref: item.pk for item in reversed(evidence)},
        transitions=[(attempt.start, "start"), (attempt.end, "end")],
        zoom=zoom,
    )


@pytest.mark.parametrize("zoom", [True, False])
def test_the_events_read_as_numbers_give_the_timeline_the_models_gave(large, zoom):
    diagnosis = large.current_diagnosis

    events = selectors.timeline_events(diagnosis)

    before = events_read_as_models(diagnosis)
    assert sorted(events, key=attrgetter("pk")) == sorted(before, key=attrgetter("pk"))
    assert len(events) == NodeEvent.objects.filter(diagnosis=diagnosis).count() > 130 * 7
    assert {e.time.tzinfo for e in events if e.time} == {UTC}
    assert {e.time.microsecond for e in events if e.time} != {0}
    drawn = lay(large, events, zoom)
    assert drawn == lay(large, before, zoom) == lay(large, events[::-1], zoom)  # in whatever order they come
    assert (drawn.collapsed > 0, drawn.untimed, drawn.lanes[0].name) == (True, 130, "node007")  # the root cause first
    assert {mark.approx for lane in drawn.lanes for mark in lane.marks} == {True, False}


def test_the_events_are_one_query_and_no_time_is_parsed_by_djangos_loader(large, django_assert_num_queries):
    with mock.patch.object(psycopg_any.BaseTzLoader, "load", autospec=True) as load:
        with django_assert_num_queries(1):
            events = selectors.timeline_events(large.current_diagnosis)
        during = load.call_count
        NodeEvent.objects.exclude(time=None).values_list("time").first()  # a time read as a time: the loader's call

    assert len(events) > 130 * 7
    assert (during, load.call_count) == (0, 1)


@pytest.mark.parametrize(
    "moment",
    [
        datetime(2026, 11, 2, 10, 4, tzinfo=UTC),
        datetime(2026, 11, 2, 10, 4, 0, 7, tzinfo=UTC),
        datetime(1999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
        datetime(1970, 1, 1, tzinfo=UTC),
        datetime(2099, 12, 31, 23, 59, 59, 500000, tzinfo=UTC),
    ],  # fmt: skip
)
def test_the_sqlite_expression_reads_the_times_django_stores_there(moment):
    """SQLite (the embedded default) stores times as text in UTC, without the fraction when it is zero."""
    sql = selectors.Microseconds.sqlite_template % {"expressions": "stored"}
    with sqlite3.connect(":memory:") as database:
        [(value,)] = database.execute(
            f"SELECT {sql} FROM (SELECT ? AS stored)", [str(moment.replace(tzinfo=None))]
        ).fetchall()

    assert selectors.EPOCH + timedelta(microseconds=value) == moment


TEMPLATE = """{% for mark in lane.marks %}
      <a class="mark role-{{ mark.role }}{% if mark.approx %} approx{% endif %}" href="{% if mark.evidence %}#evidence-{{ mark.evidence }}{% else %}{% url 'pages:event-context' attempt.pk mark.event %}{% endif %}"
         {% if mark.evidence %}data-evidence="{{ mark.evidence }}"{% else %}data-context="{% url 'pages:event-context' attempt.pk mark.event %}"{% endif %}
         aria-label="{{ lane.title }}: {{ mark.label }}" data-line="{{ mark.text }}" data-where="{{ lane.title }} · {{ mark.when }} · {{ mark.ref }}"
         transform="translate({{ mark.x }} {{ lane.middle }})">
        <title>{{ mark.label }}: {{ mark.text|truncatechars:240 }}</title>
        {% if mark.spans %}<rect class="span" x="{{ mark.span_from }}" y="-3" width="{{ mark.span_width }}" height="6" rx="3"/>{% endif %}
        {% if mark.role == "root_cause" %}<circle class="halo" r="9"/>{% endif %}
        {% if lane.name %}<rect class="glyph" x="-2.5" y="-7" width="5" height="14" rx="1"/>{% else %}<path class="glyph" d="M0,-7 L6,0 L0,7 L-6,0Z"/>{% endif %}
      </a>
      {% endfor %}"""  # noqa: E501 (the template's loop over a lane's marks before lane_marks)


def test_the_marks_are_the_markup_the_template_wrote(large):
    evidence = Evidence.objects.filter(diagnosis=large.current_diagnosis).first()
    NodeEvent.objects.filter(pk=NodeEvent.objects.filter(node__name="node050").first().pk).update(
        text="x" * 300 + " <b>&amp;",
        ref=evidence.ref,  # a long line (truncated in the title) that evidence shows
    )
    drawn = lay(large, selectors.timeline_events(large.current_diagnosis))
    template = Template(TEMPLATE)

    for lane in drawn.lanes:
        assert lane_marks(lane, large.pk) == template.render(Context({"lane": lane, "attempt": large}))
    marks = [(lane, mark) for lane in drawn.lanes for mark in lane.marks]
    assert {"root_cause", "cascade", "context"} <= {mark.role for _, mark in marks}
    assert {bool(mark.evidence) for _, mark in marks} == {True, False}
    assert {mark.approx for _, mark in marks} == {True, False}
    assert {lane.name is None for lane, _ in marks} == {True, False}
    html = "".join(lane_marks(lane, large.pk) for lane in drawn.lanes)
    assert "&lt;Watchdog&gt; &amp; &quot;timeout&quot;" in html
    assert "<Watchdog>" not in html
    assert "job &lt;ended&gt;" in html
    assert "…</title>" in html
