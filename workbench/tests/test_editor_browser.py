"""The rule editor in a real browser (Debian's Chromium through Playwright), at 1280 and 800 px: the outline of
files and rule ids, search and jump-to-id, one rule edited alone with YAML highlighting and the whole text's line
numbers, each error marked beside its own line (the last line of the text too), saving a draft through the
usual validation, and nothing blocked by the Content-Security-Policy."""

import re

import pytest
from playwright.sync_api import Page, expect

from access.roles import RULE_EDITOR
from rules.models import RuleSetRevision
from rules.outline import file_of_line, outline, rule_find, rule_replace
from rules.services import active_revision
from workbench.tests.test_browser import SET_TEXT, sign_in

pytestmark = [pytest.mark.usefixtures("transactional_roles"), pytest.mark.browser]

WIDTHS = [{"width": 1280, "height": 900}, {"width": 800, "height": 900}]

# Where a line is drawn: the top of the CodeMirror line holding ``text``, and of the mark and line number beside it.
LINE_BOXES = """text => {
  const line = [...document.querySelectorAll('.CodeMirror-code > div')].find((row) =>
    row.querySelector('.CodeMirror-line').textContent === text);
  if (!line) return null;
  const top = (el) => el && el.getBoundingClientRect().top;
  return {line: top(line.querySelector('.CodeMirror-line')), mark: top(line.querySelector('.rule-mark')),
          number: line.querySelector('.CodeMirror-linenumber').textContent,
          numberTop: top(line.querySelector('.CodeMirror-linenumber'))};
}"""


@pytest.fixture
def editor_page(page: Page, live_server, person):
    """A rule editor signed in; every console message kept (the CSP's refusals among them)."""
    person(RULE_EDITOR, "rita")
    active_revision()
    page.console = []
    page.on("console", lambda message: page.console.append(message.text))
    sign_in(page, live_server.url, "rita", person.password)
    return page


@pytest.mark.parametrize("viewport", WIDTHS, ids=["1280", "800"])
def test_one_rule_is_found_edited_alone_and_saved_as_a_draft(editor_page: Page, live_server, viewport):
    page, first = editor_page, active_revision()
    page.set_viewport_size(viewport)
    files = outline(first.text)
    page.goto(f"{live_server.url}/rules/sets/default/edit")

    # the outline: every file and every rule id; the text highlighted as YAML
    outline_box = page.locator("#editor-outline")
    expect(outline_box.locator("summary")).to_have_count(len(files))
    expect(outline_box.locator("a code")).to_have_count(sum(len(f.rules) for f in files))
    expect(page.locator(".CodeMirror .cm-atom").first).to_be_visible()  # keys
    expect(page.locator(".CodeMirror .cm-comment").first).to_be_visible()
    assert page.evaluate("() => document.documentElement.scrollWidth <= document.documentElement.clientWidth")

    # search: the outline keeps the rules whose text holds the words
    holding = [r.id for f in files for r in f.rules if "fallen off the bus" in r.text.casefold()]
    assert holding
    page.get_by_label("Search the rules").fill("fallen off the bus")
    expect(outline_box.locator("a code")).to_have_text(holding)

    # jump to an id: that rule alone, numbered as in the whole text
    rule = rule_find(files, "gpu.xid.nvlink")
    page.get_by_label("Go to rule id").fill("gpu.xid.nvlink")
    page.get_by_role("button", name="Go", exact=True).click()
    expect(page).to_have_url(re.compile(r"rule=gpu\.xid\.nvlink"))
    expect(page.locator(".editing")).to_contain_text(f"lines {rule.first}–{rule.last} of r1")
    assert page.evaluate("() => document.querySelector('.CodeMirror').CodeMirror.getValue()") == rule.text
    expect(page.locator(".CodeMirror-linenumber").filter(has_text=re.compile(r"^\d+$")).first).to_have_text(
        str(rule.first)
    )

    # a mistake: named with its file, line and field, and marked beside its own line
    broken = rule.text.replace("domain: hardware", "domain: hardwre")
    bad_line = rule.first + broken.split("\n").index("    domain: hardwre")
    page.evaluate(SET_TEXT, broken)
    errors = page.locator("#editor-errors")
    expect(errors).to_contain_text(
        f"line {bad_line} of default/gpu-xid.yaml, rule gpu.xid.nvlink, field domain: unknown domain 'hardwre'"
    )
    expect(page.locator(".CodeMirror .rule-mark")).to_have_count(1)
    boxes = page.evaluate(LINE_BOXES, "    domain: hardwre")
    assert boxes["number"] == str(bad_line)
    assert abs(boxes["mark"] - boxes["line"]) < 2, boxes
    assert abs(boxes["numberTop"] - boxes["line"]) < 2, boxes

    # fixed, with a change: saved as a draft of the whole rule set, the rest of the text as it was
    changed = rule.text.replace("Xid {xid} (NVLink)", "Xid {xid} (NVLink error)")
    page.evaluate(SET_TEXT, changed)
    loads = f"The rule set loads: {sum(len(f.rules) for f in files)} rules."
    expect(errors).to_contain_text(loads, timeout=20_000)  # the whole set checked again: seconds on a busy machine
    expect(page.locator(".CodeMirror .rule-mark")).to_have_count(0)
    page.get_by_label("Message").fill("NVLink summary says error")
    page.get_by_role("button", name="Save draft").click()
    expect(page).to_have_url(re.compile(rf"/rules/sets/default/r2/#L{rule.first}$"))
    draft = RuleSetRevision.objects.get(number=2)
    assert (draft.parent, draft.message, draft.active) == (first, "NVLink summary says error", False)
    assert draft.text == rule_replace(first.text, rule, changed)
    assert [m for m in page.console if "Content Security Policy" in m] == []


def test_a_mark_on_the_last_line_sits_beside_it(editor_page: Page, live_server):
    """The old gutter drifted a line at the end of the text: an error on the last line is marked beside it."""
    page, first = editor_page, active_revision()
    page.goto(f"{live_server.url}/rules/sets/default/edit")
    text = first.text.rstrip("\n") + "\n---\nrules:\n  - id: site.last\n    role: nonsense\n"
    last = text.rstrip("\n").count("\n") + 1
    page.evaluate(SET_TEXT, text)
    error = page.locator("#editor-errors li.rule-error").filter(has_text="field role")
    document = file_of_line(outline(text, rules=False), last).name  # the document added after the pack's
    expect(error).to_contain_text(f"line {last} of {document}, rule site.last, field role")
    error.get_by_role("link").click()
    boxes = page.evaluate(LINE_BOXES, "    role: nonsense")
    assert boxes["number"] == str(last)
    assert abs(boxes["mark"] - boxes["line"]) < 2, boxes
    assert page.evaluate("() => document.querySelector('.CodeMirror').CodeMirror.getCursor().line") == last - 1

    # find in the text: the next match from the cursor, then around the end
    page.get_by_label("Find in the text").fill("gpu.xid.nvlink")
    page.get_by_role("button", name="Next").click()
    expect(page.locator("#find-result")).to_have_text(f"line {rule_find(outline(text), 'gpu.xid.nvlink').first}")
    assert [m for m in page.console if "Content Security Policy" in m] == []
