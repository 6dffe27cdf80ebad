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


APPROXIMATE = "approximate: the line has no time of its own; the lines around it place it here"


def _interval(low: datetime, high: datetime) -> str:
    """``2026-11-02 10:14:07 – 10:14:09`` (the date once when both are on one day)."""
    shown_low, shown_high = _shown(low), _shown(high)
    if shown_low[:10] == shown_high[:10]:
        shown_high = shown_high[11:]
    return f"{shown_low} – {shown_high}"


@register.simple_tag
def when(item, field="time"):
    """A line's time: an ``ApproximateTime`` row (evidence, node event) or an item of the diagnosis document
    (root cause, candidate, evidence; a symptom's ``first`` with ``field="first"``). Exact: ``2026-11-02
    10:14:07 UTC``. Approximate, one clock time or one interval, never both (``time`` is the interval's earliest
    bound): ``~2026-11-02 10:14:07 – 10:14:09 UTC``; ``~2026-11-02 10:14:07 UTC`` when both bounds are that second
    (no interval of no width); ``some time after ...`` (or ``before``) when one bound is known. Why it is
    approximate is the element's title, not a sentence on every line."""
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
    if low is not None and high is not None and _shown(low) != _shown(high):
        shown = f"~{_interval(low, high)} {zone}"
    elif low is not None and high is not None or (time is not None and low is None and high is None):
        shown = f"~{_shown(low or time)} {zone}"
    elif low is not None:
        shown = f"some time after {_shown(low)} {zone}"
    elif high is not None:
        shown = f"some time before {_shown(high)} {zone}"
    else:
        return format_html('<span class="approx" title="{}">time unknown</span>', APPROXIMATE)
    moment = low or time or high
    return format_html(
        '<time class="approx" datetime="{}" title="{}"><span class="visually-hidden">approximately </span>{}</time>',
        moment.isoformat(),
        APPROXIMATE,
        shown,
    )
