"""Placing lines in time without inventing a time.

A line's own stamp is exact (``10:14:07``), coarse (``[Nov 2 10:14]``: somewhere in that minute),
relative (``[  +0.000844]``: that long after the stream's previous line) or kernel uptime (resolved
once the stream's boot anchors are known). A line with no stamp lies between its stream neighbours:
after the nearest earlier stamped line and before the nearest later one. Nothing is guessed beyond
that: a bound that cannot be found stays unknown, and the attempt's window stands in for it later.

The functions here work on one block of a stream (whole lines) and look at most ``LOOKBACK`` lines
away, so a stream of any size costs the same per event.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from engine.normalise import Parsed

LOOKBACK = 2000  # lines searched for a neighbour's stamp


@dataclass(frozen=True, slots=True)
class Stamp:
    """Where a line lies in time: [low, high] in unix seconds, or in kernel uptime seconds (``uptime``)."""

    low: float
    high: float
    uptime: bool = False

    def after(self, seconds: float) -> Stamp:
        """The stamp of a line ``seconds`` after this one (dmesg -H deltas). A coarse stamp's upper bound
        holds: dmesg prints a new minute stamp when the minute changes."""
        low = self.low + seconds
        return Stamp(low, max(low, self.high), self.uptime)


def own_stamp(parsed: Parsed) -> Stamp | None:
    """The stamp a line carries itself, absolute or uptime (None for no stamp or a relative one)."""
    if parsed.time is not None:
        return Stamp(parsed.time, parsed.time + parsed.span)
    if parsed.uptime is not None:
        return Stamp(parsed.uptime, parsed.uptime, uptime=True)
    return None


class BlockTimes:
    """Stamps of the lines of one block, found on demand from the lines around them.

    ``parse`` normalises one decoded line; ``carried`` is the stamp of the last stamped line of the
    stream's earlier blocks. Results are remembered, so the lines of a block are read about once.
    """

    def __init__(self, block: bytes, end: int, parse: Callable[[bytes], Parsed], carried: Stamp | None):
        self.block = block
        self.end = end
        self.parse = parse
        self.carried = carried
        self.memo_at, self.memo = -1, carried  # the stamp at or before the line starting at memo_at
        self.ahead_from, self.ahead_to = -1, -1  # the lines ending in [from, to) share the answer ``ahead``
        self.ahead: tuple[Stamp | None, bool] = (None, False)

    def at_or_before(self, start: int, parsed: Parsed | None = None) -> Stamp | None:
        """The stamp of the line starting at ``start``, or of the nearest stamped line before it.

        ``parsed`` is that line already normalised, when the caller has it.
        """
        block, shift, position = self.block, 0.0, start
        memo_at = self.memo_at if start >= self.memo_at else -1
        memo = self.memo if start >= self.memo_at else self.carried
        found: Stamp | None = None
        for _ in range(LOOKBACK):
            if position <= memo_at:
                found = memo.after(shift) if memo is not None else None
                break
            if parsed is None:
                stop = block.find(b"\n", position, self.end)
                parsed = self.parse(block[position : stop if stop != -1 else self.end])
            if parsed.delta is not None:
                shift += parsed.delta
            elif (stamp := own_stamp(parsed)) is not None:
                found = stamp.after(shift)
                break
            parsed = None
            position = block.rfind(b"\n", 0, position - 1) + 1 if position > 0 else -1
        if start >= self.memo_at:
            self.memo_at, self.memo = start, found
        return found

    def after(self, line_end: int) -> tuple[Stamp | None, bool]:
        """The stamp of the nearest stamped line after the line ending at ``line_end`` (its newline), and
        whether the search ran off the end of the block (the next block may hold it)."""
        if self.ahead_from <= line_end < self.ahead_to:
            return self.ahead
        block, position, answer = self.block, line_end + 1, (None, False)
        for _ in range(LOOKBACK):
            if position >= self.end:
                answer = (None, True)
                break
            stop = block.find(b"\n", position, self.end)
            parsed = self.parse(block[position : stop if stop != -1 else self.end])
            if parsed.delta is not None or own_stamp(parsed) is not None:
                answer = (self.at_or_before(position, parsed), False)
                break
            if stop == -1:
                answer = (None, True)
                position = self.end
                break
            position = stop + 1
        self.ahead_from, self.ahead_to, self.ahead = line_end, max(position, line_end + 1), answer
        return answer

    def first(self) -> tuple[Stamp | None, bool]:
        """The stamp of the first stamped line of the block (the later bound of the previous block's last
        lines), and whether the block has none (the search goes on in the next block)."""
        return self.after(-1)

    def last(self) -> Stamp | None:
        """The stamp at the block's last line (carried into the next block)."""
        stop = self.end - 1 if self.block[self.end - 1 : self.end] == b"\n" else self.end
        start = self.block.rfind(b"\n", 0, stop) + 1
        return self.at_or_before(start)
