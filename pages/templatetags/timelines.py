"""The timeline's marks, written here rather than by the template: the markup the template wrote, in a few
milliseconds instead of tens for the marks of a large attempt (docs/performance.md, "Pages: the 1,024-node attempt
page"). Every text is escaped as the template escaped it."""

from django import template
from django.urls import reverse
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe
from django.utils.text import Truncator

from pages.timeline import Lane, Mark

register = template.Library()

GLYPHS = {
    True: '<rect class="glyph" x="-2.5" y="-7" width="5" height="14" rx="1"/>',  # a node's lane
    False: '<path class="glyph" d="M0,-7 L6,0 L0,7 L-6,0Z"/>',  # the scheduler's and the collapsed lane
}


@register.simple_tag
def lane_marks(lane: Lane, attempt_pk: int) -> SafeString:
    """The lane's marks: each a link to its evidence row, or to its line in the log when no evidence row shows it."""
    return mark_safe("".join(_mark(mark, lane, attempt_pk) for mark in lane.marks))


def _mark(mark: Mark, lane: Lane, attempt_pk: int) -> str:
    if mark.evidence:
        href, target = f"#evidence-{mark.evidence}", f'data-evidence="{mark.evidence}"'
    else:
        href = escape(reverse("pages:event-context", args=[attempt_pk, mark.event]))
        target = f'data-context="{href}"'
    title, label = escape(lane.title), escape(mark.label)
    approx = " approx" if mark.approx else ""
    where = f"{title} · {escape(mark.when)} · {escape(mark.ref)}"
    span = (
        f'<rect class="span" x="{mark.span_from}" y="-3" width="{mark.span_width}" height="6" rx="3"/>'
        if mark.spans
        else ""
    )
    halo = '<circle class="halo" r="9"/>' if mark.role == "root_cause" else ""
    return (
        f'\n      <a class="mark role-{escape(mark.role)}{approx}" href="{href}"\n         {target}\n'
        f'         aria-label="{title}: {label}" data-line="{escape(mark.text)}" data-where="{where}"\n'
        f'         transform="translate({mark.x} {lane.middle})">\n'
        f"        <title>{label}: {escape(Truncator(mark.text).chars(240))}</title>\n"
        f"        {span}\n        {halo}\n        {GLYPHS[bool(lane.name)]}\n      </a>\n      "
    )
