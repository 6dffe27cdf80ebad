"""Chart geometry for server-rendered SVG: counts in, positions out (the template draws them)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import date

WIDTH, HEIGHT = 640, 200
LEFT, RIGHT, TOP, BOTTOM = 36, 8, 8, 24  # margins: y labels on the left, day labels below
MAX_DAY_LABELS = 8


@dataclass(frozen=True)
class Bar:
    x: float
    y: float
    width: float
    height: float
    series: str
    title: str  # "2026-11-02: 3 attributed"
    href: str = ""  # the list of the attempts it counts


@dataclass(frozen=True)
class Tick:
    position: float
    label: str


@dataclass(frozen=True)
class Chart:
    width: int
    height: int
    left: int
    bottom: float  # the baseline's y
    right: float
    bars: list[Bar]
    y_ticks: list[Tick]
    x_ticks: list[Tick]
    legend: list[tuple[str, int]]  # (series, total) in drawing order, series without counts left out
    total: int


def stacked_by_day(
    counts: dict[tuple[date, str], int],
    *,
    days: list[date],
    series: list[str],
    link: Callable[[date, str], str] | None = None,
) -> Chart:
    """A stacked bar per day: ``counts[(day, series)]``, stacked in ``series`` order from the baseline; ``link(day,
    series)`` is where a bar leads."""
    plot_width = WIDTH - LEFT - RIGHT
    plot_height = HEIGHT - TOP - BOTTOM
    baseline = HEIGHT - BOTTOM
    totals = {day: sum(counts.get((day, name), 0) for name in series) for day in days}
    top = nice_ceiling(max(totals.values(), default=0))
    step = plot_width / max(len(days), 1)
    bars = []
    for index, day in enumerate(days):
        y = baseline
        for name in series:
            value = counts.get((day, name), 0)
            if not value:
                continue
            height = value / top * plot_height
            y -= height
            bars.append(
                Bar(
                    x=round(LEFT + index * step + step * 0.1, 2),
                    y=round(y, 2),
                    width=round(step * 0.8, 2),
                    height=round(height, 2),
                    series=name,
                    title=f"{day.isoformat()}: {value} {name}",
                    href=link(day, name) if link else "",
                )
            )
    every = -(-len(days) // MAX_DAY_LABELS)  # ceiling division
    x_ticks = [
        Tick(round(LEFT + (index + 0.5) * step, 2), f"{day:%b} {day.day}")
        for index, day in enumerate(days)
        if (len(days) - 1 - index) % every == 0  # always label the last day
    ]
    y_ticks = [Tick(round(baseline - value / top * plot_height, 2), str(value)) for value in (0, top // 2, top)]
    legend = [(name, sum(counts.get((day, name), 0) for day in days)) for name in series]
    return Chart(
        width=WIDTH,
        height=HEIGHT,
        left=LEFT,
        bottom=baseline,
        right=WIDTH - RIGHT,
        bars=bars,
        y_ticks=y_ticks if top > 1 else [y_ticks[0], y_ticks[-1]],
        x_ticks=x_ticks,
        legend=[(name, total) for name, total in legend if total],
        total=sum(totals.values()),
    )


def count_by_day(rows: Iterable[dict], series_of: Callable[[dict], str]) -> Counter:
    """``{(day, series): count}`` from rows holding ``day`` and ``count`` (summed per series)."""
    counts: Counter = Counter()
    for row in rows:
        counts[row["day"], series_of(row)] += row["count"]
    return counts


def nice_ceiling(value: int) -> int:
    """The smallest of 2, 4, 10, 20, 40, 100, ... at or above ``value`` (even: the middle tick is whole)."""
    nice = 2
    while nice < value:
        nice = nice * 5 // 2 if str(nice).startswith("4") else nice * 2
    return nice
