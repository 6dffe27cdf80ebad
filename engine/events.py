"""An event: one rule's match in one place (a log line, a scheduler event, a metric sample).

Repeated identical lines are one event with a ``count``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from engine.ruleset import Rule, render


@dataclass(eq=False, slots=True)
class Event:
    rule: Rule
    node: str | None
    time: float | None  # unix seconds: the line's own time, else its earliest bound; None when nothing dates it
    exact: bool  # True when the line carries its own exact time (or a kernel uptime resolved by a boot anchor)
    source: str  # stream name, event source, metric name or "attempt"
    kind: str  # system | app | scheduler | events | metrics
    ref: str  # where it is: "logs/node02/syslog.log:4182"
    text: str  # the line as written (decoded)
    captures: dict[str, str] = field(default_factory=dict)
    count: int = 1
    last: float | None = None
    low: float | None = None  # for an inexact time: the bounds its stream neighbours (or a coarse stamp) give;
    high: float | None = None  # None where no bound is known (the attempt's window stands in)
    role: str = ""  # final role: root_cause, candidate, cascade, teardown, context
    hint: bool = False  # matched by one of its rule's hedged patterns (``hint``), not yet corroborated

    def sort_key(self) -> tuple:
        return (
            self.time if self.time is not None else float("inf"),
            self.rule.id,
            self.node or "",
            self.ref_path(),
            self.ref_line(),
            self.text,
        )

    def ref_path(self) -> str:
        return self.ref.rsplit(":", 1)[0] if ":" in self.ref else self.ref

    def ref_line(self) -> int:
        tail = self.ref.rsplit(":", 1)[-1]
        return int(tail) if tail.isdigit() else 0

    def summary(self) -> str:
        values = dict(self.captures)
        values["node"] = self.node or "the job"
        values["count"] = str(self.count)
        return render(self.rule.summary or self.rule.description, values)
