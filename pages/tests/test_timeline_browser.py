"""The timeline of a 256-node attempt in a real browser (Playwright driving Debian's Chromium), at 1280 and 800 px:
the root cause's lane first, no text drawn under 11 px, lane labels inside their column, and every mark reachable
by the pointer where the scheduler's transition lines cross it."""

import pytest
from playwright.sync_api import Page, expect

from access.roles import VIEWER
from pages import timeline
from pages.tests.browser import sign_in

pytestmark = [pytest.mark.usefixtures("transactional_roles"), pytest.mark.browser]

NODES = tuple(f"gke-ml-a3u-pool-98346da9-{i:04d}" for i in range(256))  # long names: shortened to fit

# Every text of the timeline that is drawn: its size on screen (its font size in the drawing's units times the
# drawing's scale), and for a lane label whether it ends inside the label column (its own box, before clipping).
TEXTS = """(labelWidth) => {
  const svg = document.querySelector('svg.timeline'); const scale = svg.getScreenCTM().a;
  return [...svg.querySelectorAll('text')].filter((t) => getComputedStyle(t).display !== 'none').map((t) => ({
    text: t.textContent, px: parseFloat(getComputedStyle(t).fontSize) * scale,
    inside: !t.classList.contains('lane-label') || t.getBBox().x + t.getBBox().width <= labelWidth - 4}));
}"""

# The marks that a scheduler's transition line crosses, and what the pointer finds there, on the line.
UNDER_MARKERS = """() => {
  const xs = [...document.querySelectorAll('.timeline .marker line')].map((line) => {
    const box = line.getBoundingClientRect(); return box.left + box.width / 2; });
  return [...document.querySelectorAll('.timeline .mark')].flatMap((mark) => {
    mark.scrollIntoView({block: 'center'});
    const box = mark.querySelector('.glyph').getBoundingClientRect();
    const x = xs.find((x) => box.left + 1 <= x && x <= box.right - 1);
    if (x === undefined) return [];
    const hit = document.elementFromPoint(x, box.top + box.height / 2);
    return [{mark: mark.ariaLabel, hit: hit && hit.closest('.mark') ? 'mark' : hit && hit.outerHTML.slice(0, 60)}];
  });
}"""


@pytest.mark.parametrize("width", [1280, 800])
def test_a_large_attempts_timeline_reads_at_any_width(page: Page, live_server, make_bundle, store, person, width):
    attempt = store(make_bundle(nodes=NODES, faulty=NODES[200]))
    person(VIEWER, "vic")
    sign_in(page, live_server, "vic", person.password)
    page.set_viewport_size({"width": width, "height": 900})
    page.goto(f"{live_server.url}/attempts/{attempt.pk}/?window=attempt")

    lanes = page.locator(".timeline .lane")
    expect(lanes.first).to_have_class("lane is-root-cause")
    expect(lanes.first.locator("a > title").first).to_have_text(f"{NODES[200]}: root cause")
    expect(lanes.last.locator(".lane-label").first).to_contain_text("other nodes")

    texts = page.evaluate(TEXTS, timeline.LABEL_WIDTH)
    assert len(texts) > 30
    assert all(t["px"] >= 11 for t in texts), [t for t in texts if t["px"] < 11]
    assert all(t["inside"] for t in texts), [t for t in texts if not t["inside"]]

    crossed = page.evaluate(UNDER_MARKERS)
    assert crossed, "no mark lies under a transition line: the check below would prove nothing"
    assert all(c["hit"] == "mark" for c in crossed), crossed
    assert page.evaluate("() => document.documentElement.scrollWidth <= document.documentElement.clientWidth")
