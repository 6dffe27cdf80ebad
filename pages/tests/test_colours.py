"""The stylesheet's colours: each domain of the charts apart from every other (hardware and application above all),
and "attributed" not drawn in the green that reads as "fine"."""

import itertools
import re
from pathlib import Path

from pages.views.overview import DOMAIN_SERIES, OUTCOME_SERIES

CSS = (Path(__file__).resolve().parents[2] / "static" / "css" / "faultline.css").read_text()


def colour(selector: str) -> str:
    """The hex fill of ``selector`` in the stylesheet, through one ``var(--name)``."""
    fill = re.search(re.escape(selector) + r" \{ fill: ([^;]+);", CSS).group(1)
    if fill.startswith("var("):
        fill = re.search(re.escape(fill[4:-1]) + r": (#[0-9a-f]{6})", CSS).group(1)
    return fill


def lab(hex_colour: str) -> tuple[float, float, float]:
    """CIE L*a*b* (D65) of an sRGB colour."""
    rgb = [int(hex_colour[i : i + 2], 16) / 255 for i in (1, 3, 5)]
    r, g, b = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in rgb]
    xyz = (
        (0.4124 * r + 0.3576 * g + 0.1805 * b) / 0.95047,
        0.2126 * r + 0.7152 * g + 0.0722 * b,
        (0.0193 * r + 0.1192 * g + 0.9505 * b) / 1.08883,
    )
    fx, fy, fz = [t ** (1 / 3) if t > 0.008856 else 7.787 * t + 16 / 116 for t in xyz]
    return 116 * fy - 16, 500 * (fx - fy), 200 * (fy - fz)


def distance(one: str, other: str) -> float:
    return sum((p - q) ** 2 for p, q in zip(lab(one), lab(other), strict=True)) ** 0.5


def test_every_series_of_a_chart_is_easy_to_tell_from_the_others():
    for series in (DOMAIN_SERIES, OUTCOME_SERIES):
        colours = {name: colour(f".series-{name.replace(' ', '-')}") for name in series}
        close = [
            (a, b, round(distance(colours[a], colours[b])))
            for a, b in itertools.combinations(series, 2)
            if distance(colours[a], colours[b]) < 25 and {a, b} != {"none", "not analysed"}  # both grey: nothing
        ]
        assert close == []
    assert distance(colour(".series-hardware"), colour(".series-application")) > 40


def test_attributed_is_not_green():
    attributed, ok = colour(".series-attributed"), re.search(r"--ok: (#[0-9a-f]{6})", CSS).group(1)
    assert lab(attributed)[1] > -5  # a*: green is strongly negative
    assert distance(attributed, ok) > 30
    assert ".badge.attributed { color: var(--attributed); }" in CSS
