"""Events from what is not a log stream: scheduler and Kubernetes events, Prometheus series, the scheduler's
record of the attempt, and the findings of its Flight Recorder dumps."""

from __future__ import annotations

import math

from engine.context import AttemptContext
from engine.events import Event
from engine.flight_recorder.attempt import AttemptDumps
from engine.matching import event_node, line_patterns, stream_mismatch
from engine.node_names import NodeNames
from engine.ruleset import Rule


def scheduler_events(rules: list[Rule], context: AttemptContext, nodes: NodeNames) -> list[Event]:
    """Scheduler and Kubernetes events, each matched as the line ``Reason: message``: one event per rule that
    matches it (its first matching pattern)."""
    out = []
    job_id = context.attempt.job_id
    for item in context.events:
        text = f"{item.reason}: {item.message}" if item.reason else item.message
        time = item.time.timestamp() if item.time else None
        for rule in rules:
            if stream_mismatch(rule, "events", item.source):
                continue
            for pattern in line_patterns(rule):
                tested = pattern.test(text, job_id)
                if tested is None or tested[1] is not None:
                    continue
                captures = tested[0]
                out.append(
                    Event(
                        rule=rule, node=event_node(rule, captures, nodes.canonical(item.node), nodes.canonical),
                        time=time, exact=time is not None, source=item.source, kind="events", ref=item.ref,
                        text=text, captures=captures, last=time, hint=pattern.hint,
                    )
                )  # fmt: skip
                break
    return out


def metric_events(rules: list[Rule], context: AttemptContext, nodes: NodeNames, margin: float) -> list[Event]:
    """Samples of Prometheus series where a rule's condition holds inside the attempt's window plus ``margin``."""
    attempt = context.attempt
    low, high = attempt.start.timestamp() - margin, attempt.end.timestamp() + margin
    out = []
    for rule in rules:
        condition = rule.metric
        for series in context.metrics:
            if not condition.selects(series.name, series.labels):
                continue
            for before, stamp, captures, description in _metric_hits(condition, series.samples, low, high):
                captures = {**series.labels, **captures}
                if not all(f.accepts(captures) for f in rule.filters):
                    continue
                labels = ",".join(f'{k}="{v}"' for k, v in sorted(series.labels.items()) if k != "__name__")
                out.append(
                    Event(
                        rule=rule, node=nodes.canonical(series.node), time=stamp if before is None else before,
                        exact=False, source=series.name, kind="metrics", ref=series.ref,
                        text=f"{series.name}{{{labels}}} {description}", captures=captures, last=stamp,
                        low=before, high=stamp,
                    )
                )  # fmt: skip
                if condition.function != "changes":
                    break
    return out


def attempt_events(rules: list[Rule], context: AttemptContext) -> list[Event]:
    """One event at the attempt's end for each rule whose condition the scheduler's record meets: the job's, or for
    a rule of a node's cause (a node failure, an out-of-memory kill) on a one-node attempt, that node's."""
    attempt = context.attempt
    text = f"state={attempt.state} exit_code={attempt.exit_code or '-'} reason={attempt.reason or '-'}"
    end = attempt.end.timestamp()
    captures = {"state": attempt.state, "exit_code": attempt.exit_code, "reason": attempt.reason}
    only = attempt.nodes[0] if len(attempt.nodes) == 1 else None  # a one-node attempt's verdict names its node
    return [
        Event(
            rule=rule,
            node=only if rule.nodes != "job" else None,
            time=end,
            exact=True,
            source="attempt",
            kind="scheduler",
            ref="attempt.json",
            text=text,
            captures=dict(captures),
            last=end,
        )  # fmt: skip
        for rule in rules
        if rule.attempt.accepts(attempt)
    ]


def flight_recorder_events(rules: list[Rule], dumps: AttemptDumps | None, nodes: NodeNames) -> list[Event]:
    """One event per finding of the Flight Recorder analysis and node its ranks ran on, at the time the first
    rank enqueued the operation (the dumps' own clock); captures rank, process group, seq, op, waited..."""
    if dumps is None:
        return []
    out = []
    for rule in rules:
        for culprit in dumps.culprits:
            if culprit.finding.kind not in rule.flight_recorder.findings:
                continue
            captures = culprit.captures()
            if not all(f.accepts(captures) for f in rule.filters):
                continue
            out.append(
                Event(
                    rule=rule, node=nodes.canonical(culprit.node), time=culprit.time,
                    exact=culprit.time is not None, source="flight_recorder", kind="traces", ref=culprit.ref,
                    text=culprit.text, captures=captures, last=culprit.time,
                )
            )  # fmt: skip
    return out


def _metric_hits(condition, samples, low: float, high: float):
    """(earlier sample's time, time, captures, description) for each sample where the condition holds inside
    [low, high]: what a sample shows happened after the sample before it, and by its own time."""
    previous = None
    base = None
    before = None
    for stamp, value in samples:
        if stamp < low:
            previous = value
            base = value
            before = stamp
            continue
        if stamp > high:
            break
        if condition.function == "changes":
            if previous is not None and value != previous and condition.compare(value):
                yield (
                    before,
                    stamp,
                    {"value": _number(value), "previous": _number(previous)},
                    (f"changed {_number(previous)} -> {_number(value)}"),
                )
        elif condition.function == "increase":
            if base is None:
                base = value
            elif previous is not None and value < previous:  # counter reset
                base -= previous
            increase = value - base
            if condition.compare(increase):
                yield before, stamp, {"value": _number(increase)}, f"increased by {_number(increase)}"
        elif condition.compare(value):  # max / min: the first sample past the threshold
            yield (
                before,
                stamp,
                {"value": _number(value)},
                f"{condition.function} {condition.op} {_number(condition.threshold)}: {_number(value)}",
            )
        previous = value
        before = stamp


def _number(value: float) -> str:
    return str(int(value)) if math.isfinite(value) and value == int(value) else repr(value)
