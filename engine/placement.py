"""Dating events: turn the stamps around an event's line into its time, once its stream has been read.

An event's line carries an exact stamp, a coarse or relative one, kernel uptime (resolved through the boot's
anchors), or none (it lies between its stream neighbours). Kernel logs without a boot anchor of their own may
be dated by a process the kernel killed that another stream saw exit (docs/rules.md, "Time").
"""

from __future__ import annotations

from dataclasses import dataclass

from engine.events import Event
from engine.normalise import BootClock, Parsed
from engine.timing import BlockTimes, Stamp, own_stamp

# A process the kernel killed (a rule tagged ``process.killed``) is seen gone by its supervisor (``process.exited``)
# at most this long after: torchrun polls its workers every 5 s (0.1 s since PyTorch 2.2's ``--monitor-interval``),
# and a process with a large address space takes seconds to exit once killed.
EXIT_NOTICED_WITHIN = 30.0


@dataclass(slots=True)
class Placement:
    """What is known of one event's time while its stream is read: its own stamp, or the stamps of the
    stamped lines around it (``high`` may come from a later block: ``waits``)."""

    event: Event
    line_no: int
    low: Stamp | None
    high: Stamp | None
    exact: bool
    waits: bool = False

    def settle(self, boot: BootClock) -> None:
        """Turn the stamps into the event's times, kernel uptime resolved through the boot anchors."""
        event = self.event
        low = resolve(boot, self.line_no, self.low, high=False)
        high = resolve(boot, self.line_no, self.high, high=True)
        exact = self.exact and low is not None and (not self.low.uptime or boot.exact(self.line_no))
        event.exact = exact
        event.low, event.high = (low, low) if exact else (low, high)
        event.time = low if low is not None else high
        if event.last is None or event.time is not None and event.last < event.time:
            event.last = event.time

    def unanchored(self, boot: BootClock) -> bool:
        """Whether a kernel uptime stamp left this event's time unknown (no boot anchor in its stream)."""
        return any(
            stamp is not None and stamp.uptime and boot.resolve(self.line_no, stamp.low) is None
            for stamp in (self.low, self.high)
        )


def place(event: Event, line_no: int, parsed: Parsed, times: BlockTimes, start: int, end: int) -> Placement:
    own = own_stamp(parsed)
    if own is not None and parsed.span == 0:
        return Placement(event, line_no, own, own, exact=True)
    if own is not None or parsed.delta is not None:  # a coarse stamp, or relative to earlier lines
        stamp = times.at_or_before(start, parsed)
        return Placement(event, line_no, stamp, stamp, exact=False)
    low = times.at_or_before(start, parsed)
    high, waits = times.after(end if end != -1 else times.end)
    return Placement(event, line_no, low, high, exact=False, waits=waits)


def resolve(boot: BootClock, line_no: int, stamp: Stamp | None, *, high: bool) -> float | None:
    if stamp is None:
        return None
    value = stamp.high if high else stamp.low
    return boot.resolve(line_no, value, high=high) if stamp.uptime else value


def anchor_by_killed_processes(events: list[Event], stats) -> None:
    """Date kernel logs that have no boot anchor of their own by a process the kernel killed (the OOM killer names
    its pid) that another stream saw exit at a known time (torchrun's ``failed (exitcode: -9) local_rank: 0 (pid:
    N)``) on the same node: the kill happened at most ``EXIT_NOTICED_WITHIN`` before that, which bounds the boot's
    time, and so every line of that boot. The events of such streams get those bounds, as approximate times."""
    exited: dict[tuple[str | None, str], float] = {}  # (node, pid) -> when a supervisor first saw it gone
    for event in events:
        pid = event.captures.get("pid")
        if pid and event.exact and "process.exited" in event.rule.tags:
            key = (event.node, pid)
            exited[key] = min(exited.get(key, event.time), event.time)
    if not exited:
        return
    for stat in stats:
        bounded = False
        for placement in stat.unanchored:
            event = placement.event
            seen = exited.get((event.node, event.captures.get("pid", "")))
            if seen is not None and "process.killed" in event.rule.tags and placement.low and placement.low.uptime:
                bounded |= stat.boot.bound(placement.line_no, placement.low.low, seen - EXIT_NOTICED_WITHIN, seen)
        if bounded:
            for placement in stat.unanchored:
                placement.settle(stat.boot)
            stat.last = resolve(stat.boot, stat.lines, stat.tail, high=False)
