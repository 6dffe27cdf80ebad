"""The pages an operator trusts, in a real browser (Playwright driving Debian's Chromium against the live
server, on the demo data): the layout at 1280 and 800 px (element boxes), nothing scrolling sideways at 800 px
but tables in their own box, focus visible on every control, the evidence context opening on its line, every
timeline mark leading to its line, the error pages in the site's layout and signing out."""

import re

import pytest
from django.core.management import call_command
from playwright.sync_api import Page, expect

from access.roles import RULE_EDITOR
from diagnoses.models import Attempt

pytestmark = [pytest.mark.usefixtures("transactional_roles"), pytest.mark.browser]

WIDE, NARROW = {"width": 1280, "height": 800}, {"width": 800, "height": 900}

# What sticks out past the viewport, and is not inside a box that scrolls on its own.
OVERFLOWING = """() => {
  const width = document.documentElement.clientWidth;
  const scrolls = (el) => { for (let p = el.parentElement; p; p = p.parentElement) {
      const x = getComputedStyle(p).overflowX; if (x === "auto" || x === "scroll" || x === "hidden") return true; }
    return false; };
  return [...document.body.querySelectorAll("*")]
    .filter((el) => el.getBoundingClientRect().right > width + 1 && !scrolls(el))
    .map((el) => el.tagName.toLowerCase() + (el.id ? "#" + el.id : "") + "." + [...el.classList].join("."))
    .slice(0, 10);
}"""

# Whether the focused element shows it: an outline (the rule editor's frame for its input), or (an SVG mark) a
# stroke on its shape.
FOCUS_SHOWN = """() => {
  const el = document.activeElement; const style = getComputedStyle(el.closest(".CodeMirror") || el);
  if (style.outlineStyle !== "none" && parseFloat(style.outlineWidth) > 0) return true;
  return [...el.querySelectorAll("rect, path, circle")].some((shape) => {
    const drawn = getComputedStyle(shape); return drawn.stroke !== "none" && parseFloat(drawn.strokeWidth) >= 2; });
}"""


# The accessible name of the focused timeline mark (false when the focus is elsewhere).
FOCUSED_MARK = "() => document.activeElement.matches('.timeline .mark') && document.activeElement.ariaLabel"


@pytest.fixture
def operator(page: Page, live_server, person):
    """The demo data, and a rule editor signed in (at 1280 px)."""
    call_command("load_demo", verbosity=0)
    person(RULE_EDITOR, "rita")
    page.goto(f"{live_server.url}/accounts/login/")
    page.get_by_label("Username").fill("rita")
    page.get_by_label("Password").fill(person.password)
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("heading", name="Overview")).to_be_visible()
    return page


def attributed() -> Attempt:
    """An attempt attributed to a cause on one of its nodes."""
    return (
        Attempt.objects.filter(
            current_diagnosis__outcome="attributed", current_diagnosis__root_cause_nodes__isnull=False
        )
        .order_by("pk")
        .first()
    )


def main_pages(attempt: Attempt) -> list[str]:
    """The pages an operator lives in, for ``attempt`` and its root-cause node."""
    node = attempt.current_diagnosis.root_cause_nodes.first()
    return [
        "/",
        "/jobs/",
        f"/attempts/{attempt.pk}/",
        "/triage/",
        "/nodes/",
        f"/nodes/{attempt.cluster.name}/{node.name}/",
        f"/search/?q={node.name[:4]}",
        "/clusters/",
        "/rules/",
        "/rules/sets/default/",
        "/rules/sets/default/edit",
        "/rules/sets/default/edit?rule=gpu.xid.nvlink",
        "/rules/sets/default/r1/explore",
        "/rules/sets/default/r1/explore?line=NVRM%3A+Xid+79&stream=syslog&rule=gpu.xid.memory",
        "/rules/reanalyse/",
    ]


def test_the_rule_editor_fills_its_column_beside_the_outline_or_below_it(operator: Page, live_server):
    for viewport in (WIDE, NARROW):
        operator.set_viewport_size(viewport)
        operator.goto(f"{live_server.url}/rules/sets/default/edit")
        outline = operator.locator(".outline-pane").bounding_box()
        text = operator.locator(".CodeMirror").bounding_box()
        main = operator.locator("main").bounding_box()
        if viewport is WIDE:  # beside the outline
            assert outline["y"] <= text["y"] < outline["y"] + outline["height"] / 2, (viewport, outline, text)
            assert text["x"] >= outline["x"] + outline["width"], (viewport, outline, text)
        else:  # under it, as wide as the page
            assert text["y"] >= outline["y"] + outline["height"], (viewport, outline, text)
            assert text["width"] >= 0.9 * main["width"] - 40, (viewport, main, text)
        assert text["x"] + text["width"] >= main["x"] + main["width"] - 40, (viewport, main, text)  # to the edge
        gutter = operator.locator(".CodeMirror-gutters").bounding_box()
        assert gutter["width"] < 0.15 * text["width"], (viewport, gutter, text)


def test_nothing_scrolls_sideways_at_800_px(operator: Page, live_server):
    operator.set_viewport_size(NARROW)
    for path in main_pages(attributed()):
        operator.goto(f"{live_server.url}{path}")
        sizes = operator.evaluate("() => [document.documentElement.scrollWidth, document.documentElement.clientWidth]")
        assert sizes[0] <= sizes[1], (path, sizes, operator.evaluate(OVERFLOWING))


def test_focus_is_visible_on_every_control(operator: Page, live_server):
    for path in main_pages(attributed()):
        operator.goto(f"{live_server.url}{path}")
        controls = operator.locator("a[href], button, input, select, textarea, summary, [tabindex='0']")
        missing = []
        for index in range(controls.count()):
            control = controls.nth(index)
            if not control.is_visible():
                continue
            control.focus()
            if not operator.evaluate(FOCUS_SHOWN):
                missing.append(control.evaluate("el => el.outerHTML.slice(0, 120)"))
        assert missing == [], path
        if path.startswith("/attempts/"):
            assert operator.locator(".timeline .mark").count() > 1  # the marks were among them


def test_overlapping_marks_are_reached_one_by_one_from_the_keyboard(operator: Page, live_server):
    attempt = attributed()
    operator.goto(f"{live_server.url}/attempts/{attempt.pk}/")
    marks = operator.locator(".timeline .mark")
    labels = [marks.nth(i).get_attribute("aria-label") for i in range(marks.count())]
    marks.first.focus()
    reached = []
    for _ in range(3 * len(labels)):  # Tab through the timeline (lane names are links too)
        focused = operator.evaluate(FOCUSED_MARK)
        if focused:
            reached.append(focused)
        elif reached and not operator.evaluate("() => !!document.activeElement.closest('.timeline')"):
            break
        operator.keyboard.press("Tab")
    assert reached == labels  # every mark once, in order, those drawn over each other too


def test_every_timeline_mark_leads_to_its_line(operator: Page, live_server):
    attempt = attributed()
    operator.goto(f"{live_server.url}/attempts/{attempt.pk}/?window=attempt")
    marks = operator.locator(".timeline .mark")
    for index in range(marks.count()):
        mark = marks.nth(index)
        expect(mark).to_have_attribute("href", re.compile(r"^(#evidence-\d+|/attempts/\d+/events/\d+/context)$"))
        mark.focus()
        operator.keyboard.press("Enter")
        if mark.get_attribute("data-evidence"):
            selected = operator.locator(".evidence-item.is-selected")
            expect(selected).to_be_focused()
            expect(selected).to_be_in_viewport()
        else:
            hit = operator.locator("#timeline-line .context-lines li.hit")
            expect(hit).to_have_text(mark.get_attribute("data-line"))
            box, line = operator.locator("#timeline-line .context-lines").bounding_box(), hit.bounding_box()
            assert box["y"] <= line["y"]
            assert line["y"] + line["height"] <= box["y"] + box["height"]


def test_the_evidence_context_opens_on_the_matched_line(operator: Page, live_server):
    attempt = attributed()
    operator.goto(f"{live_server.url}/attempts/{attempt.pk}/")
    item = operator.locator(".evidence-item").filter(has=operator.locator("details")).first
    item.get_by_text("Surrounding lines").click()
    lines = item.locator(".context-lines")
    hit = lines.locator("li.hit")
    expect(hit).to_have_text(item.locator(".log-line").inner_text())
    box, line = lines.bounding_box(), hit.bounding_box()
    if lines.evaluate("list => list.scrollHeight > list.clientHeight"):  # a box that scrolls: the line in its middle
        middle = box["y"] + box["height"] / 2
        assert abs(line["y"] + line["height"] / 2 - middle) < box["height"] / 4, (box, line)
    assert box["y"] <= line["y"], (box, line)
    assert line["y"] + line["height"] <= box["y"] + box["height"], (box, line)


def test_error_pages_are_in_the_site_layout_and_signing_out_lands_on_the_login_page(
    operator: Page, live_server, settings, person, monkeypatch
):
    settings.DEBUG = False
    operator.goto(f"{live_server.url}/attempts/987654321/")
    expect(operator.get_by_role("heading", name="Not found")).to_be_visible()
    expect(operator.get_by_role("navigation", name="Main")).to_be_visible()

    monkeypatch.setattr("pages.views.overview.selectors.backlog_size", lambda: 1 / 0)
    response = operator.goto(f"{live_server.url}/")
    assert response.status == 500
    expect(operator.get_by_role("heading", name="Something went wrong on our side")).to_be_visible()
    expect(operator.locator("header.top .brand")).to_have_text("Faultline")
    monkeypatch.undo()

    operator.goto(f"{live_server.url}/")
    operator.get_by_role("button", name="Sign out").click()
    expect(operator).to_have_url(re.compile(r"/accounts/login/$"))
    expect(operator.get_by_role("heading", name="Sign in to Faultline")).to_be_visible()

    person(None, "nobody")  # signed in, but no role: the workbench's editor is refused
    operator.get_by_label("Username").fill("nobody")
    operator.get_by_label("Password").fill(person.password)
    operator.get_by_role("button", name="Sign in").click()
    response = operator.goto(f"{live_server.url}/rules/sets/default/edit")
    assert response.status == 403
    expect(operator.get_by_role("heading", name="Not allowed")).to_be_visible()
    expect(operator.get_by_role("navigation", name="Main")).to_be_visible()
