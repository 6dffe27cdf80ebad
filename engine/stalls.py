"""Events read from when things stop, once every log stream has been read: a node whose logs stop before the
others' (``silence``), and a job whose progress lines stop long before its end (``stall``)."""

from __future__ import annotations

from engine.context import AttemptContext
from engine.events import Event
from engine.ruleset import Rule
from engine.streams import StreamStats


def silence_events(rules: list[Rule], context: AttemptContext, stats: list[StreamStats]) -> list[Event]:
    """Nodes whose logs stop well before the other nodes' (a node lost mid-job just goes quiet)."""
    attempt = context.attempt
    out = []
    for rule in rules:
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


def stall_events(rules: list[Rule], context: AttemptContext, stats: list[StreamStats]) -> list[Event]:
    """The job's progress stopped long before its end, measured against its own pace: one event at its last
    progress line (captures ``minutes``, the silence, ``pace``, the usual seconds between progress lines, and
    ``last``, the line)."""
    end = context.attempt.end.timestamp()
    out = []
    for rule in rules:
        condition = rule.stall
        records = [r for s in stats for r in s.progress.values() if condition.progress.selects(r.event.rule)]
        if not records:
            continue
        last = max(records, key=lambda r: (_or(r.event.high, end), _or(r.event.low, 0.0), r.event.ref))
        stopped = _or(last.event.high, end)
        gap = end - stopped
        if gap < max(condition.min_gap, condition.cadence * last.interval()):
            continue
        if condition.final is not None and not condition.final.selects(last.event.rule):
            continue
        source = last.event
        nodes = {r.event.node for r in records}
        out.append(
            Event(
                rule=rule, node=source.node if len(nodes) == 1 else None, time=source.time, exact=source.exact,
                source=source.source, kind="app", ref=source.ref, text=source.text,
                captures={"minutes": f"{gap / 60:.0f}", "pace": f"{last.interval():g}", "last": source.text[:200]},
                last=source.time, low=source.low, high=source.high,
            )
        )  # fmt: skip
    return out


def _or(value: float | None, default: float) -> float:
    return default if value is None else value
