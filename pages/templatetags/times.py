"""Times as the triage pages show them: always with their zone, and a time the engine did not read from its
line (docs/rules.md, "Time") as approximate: ``~10:14`` with the interval it lies in on hover and on focus."""

from datetime import datetime

from django import template
from django.utils import timezone
from django.utils.dateformat import format as date_format
from django.utils.html import format_html

register = template.Library()

FULL = "Y-m-d H:i:s"


def _moment(value) -> datetime | None:
    """A datetime, from a model field or the diagnosis document's ISO text (``2026-11-02T10:14:07Z``)."""
    if value is None or isinstance(value, datetime):
        return value
    return datetime.fromisoformat(value)


def _shown(moment: datetime) -> str:
    return date_format(timezone.localtime(moment), FULL)


def bounds_text(low: datetime | None, high: datetime | None) -> str:
    """``between 10:14:07 and 10:14:09 UTC``, ``after ...``, ``before ...``: where an approximate time lies."""
    zone = timezone.get_current_timezone_name()
    if low is not None and high is not None:
        return f"between {_shown(low)} and {_shown(high)} {zone}"
    if low is not None:
        return f"after {_shown(low)} {zone}"
    if high is not None:
        return f"before {_shown(high)} {zone}"
    return "at a time the logs do not tell"


@register.simple_tag
def when(item, field="time"):
    """A line's time: an ``ApproximateTime`` row (evidence, node event) or an item of the diagnosis document
    (root cause, candidate, evidence; a symptom's ``first`` with ``field="first"``). Exact: ``2026-11-02
    10:14:07 UTC``. Approximate: ``~2026-11-02 10:14:07 UTC``, focusable, with its bounds in its title and in
    text that hovering or focusing shows."""
    if isinstance(item, dict):
        time, approx = _moment(item.get(field)), bool(item.get(f"{field}_approx"))
        low, high = (_moment(b) for b in item.get(f"{field}_bounds") or (None, None))
    else:
        time, approx, low, high = item.time, item.time_approx, item.time_low, item.time_high
    zone = timezone.get_current_timezone_name()
    if not approx:
        if time is None:
            return ""
        return format_html('<time datetime="{}">{} {}</time>', time.isoformat(), _shown(time), zone)
    bounds = bounds_text(low, high)
    if time is not None:
        shown = f"~{_shown(time)} {zone}"
    elif low is not None and high is not None:
        shown = f"~{_shown(low)} – {_shown(high)} {zone}"  # known only by the interval
    else:
        shown = "time unknown"
    moment = time or low or high
    return format_html(
        '<{} class="approx" tabindex="0"{} title="approximate: {}" data-bounds="{}">{}'
        '<span class="visually-hidden"> (approximate: {})</span></{}>',
        "time" if moment else "span",
        format_html(' datetime="{}"', moment.isoformat()) if moment else "",
        bounds,
        bounds,
        shown,
        bounds,
        "time" if moment else "span",
    )
