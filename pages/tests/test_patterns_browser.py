"""The failure patterns in a real browser, on the demo data (docs/leads.md): the demo's GPU thermal slowdown recurs
and no rule knows it. A rule editor finds it first on the patterns page, sees its lines as the attempts' leads (with
their surrounding lines), drafts a rule from it (the domain left to choose: refused until chosen), tries it on the
pattern's attempts, backtests it, activates it and reanalyses the pattern's attempts, which are then attributed.
Screenshots go where pages/tests/test_browser.py puts them (``make screenshots``: docs/screenshots/)."""

import re

import pytest
from django.core.management import call_command
from playwright.sync_api import Page, expect

from access.roles import RULE_EDITOR, TRIAGER
from diagnoses.models import Attempt, Template
from pages.tests.browser import SET_TEXT, sign_in
from pages.tests.test_browser import shoot

pytestmark = [pytest.mark.usefixtures("transactional_roles"), pytest.mark.browser]


def test_a_rule_editor_turns_the_recurring_unknown_failure_into_a_rule(page: Page, live_server, person):
    call_command("load_demo", verbosity=0)
    recurring = Template.objects.filter(attempts__gt=0, status="new", text__contains="thermal violation")
    pattern = recurring.order_by("-attempts", "pk").first()  # the demo's recurring unknown failure
    attempts = set(Attempt.objects.filter(lead_sets__current=True, lead_sets__leads__template=pattern,
                                          lead_sets__leads__position__lte=3).values_list("pk", flat=True))  # fmt: skip
    assert len(attempts) == pattern.attempts >= 4
    person(TRIAGER, "tess")
    person(RULE_EDITOR, "rita")
    sign_in(page, live_server, "rita", person.password)

    # The patterns page lists it, its variable parts marked.
    page.get_by_role("link", name="Patterns", exact=True).click()
    first = page.locator("table.patterns tbody tr", has_text="thermal violation").first
    expect(first.locator("td.num")).to_have_text(str(len(attempts)))
    expect(first.locator("mark.var").first).to_be_visible()
    shoot(page, "patterns")

    # Its page, then one of its attempts: the line is the attempt's lead, and opens its surrounding lines.
    first.locator("a.template").click()
    expect(page.get_by_role("heading", name=f"Pattern {pattern.key}")).to_be_visible()
    shoot(page, "pattern")
    page.locator("section[aria-labelledby=examples-heading] tbody a").first.click()
    leads = page.locator("#leads")
    expect(leads.get_by_role("heading", name="Leads: lines no rule knows yet")).to_be_visible()
    lead = leads.locator("li.lead", has_text="thermal violation").first
    lead.locator("summary").click()
    expect(lead.locator(".context-lines li.hit")).to_contain_text("thermal violation")
    leads.scroll_into_view_if_needed()
    shoot(page, "attempt-leads")

    # Draft a rule: refused until its domain and subdomain are chosen.
    page.goto(f"{live_server.url}/patterns/{pattern.key}/")
    page.get_by_role("link", name="Draft a rule").click()
    expect(page.locator("#editor-errors")).to_contain_text("domain")
    drafted = page.input_value("#rule-source")
    assert "streams: [system]" in drafted
    page.get_by_role("button", name="Save draft and try it").click()
    expect(page.get_by_text("The rule was not saved")).to_be_visible()
    classified = drafted.replace("    domain:  ", "    domain: hardware  ", 1).replace(
        "    subdomain:  ", "    subdomain: gpu.thermal  ", 1
    )
    page.evaluate(SET_TEXT, classified)  # the rule editor (CodeMirror) over the text area
    expect(page.locator("#editor-errors")).to_contain_text("The rule set loads")
    shoot(page, "pattern-draft")
    page.get_by_role("button", name="Save draft and try it").click()

    # Tried on the pattern's attempts: every one changes.
    expect(page).to_have_url(re.compile(rf"/rules/sets/default/r2/patterns/{pattern.key}/$"))
    expect(page.locator("#trial-summary")).to_contain_text(f"{len(attempts)} of the {len(attempts)} attempts tried")
    shoot(page, "pattern-trial")

    # The backtest over history: exactly those attempts change.
    page.get_by_role("link", name="backtest r2 over history").click()
    page.get_by_role("button", name="Start the backtest").click()
    expect(page.locator("#run-progress")).to_have_attribute("data-state", "done")
    expect(page.locator("#backtest-summary")).to_contain_text(re.compile(rf"^{len(attempts)} of \d+ diagnoses"))
    changed = page.locator("#backtest-changes tr.change").evaluate_all("rows => rows.map(r => r.dataset.attempt)")
    assert sorted(map(int, changed)) == sorted(attempts)

    # Activated, and the pattern's attempts reanalysed: attributed, and the pattern leads none.
    page.goto(f"{live_server.url}/rules/sets/default/r2/")
    page.fill("#activate-form input[name=message]", "GPU thermal violations are a cause")
    page.get_by_role("button", name="Activate").click()
    expect(page.locator("#revision-2")).to_contain_text("active")
    page.goto(f"{live_server.url}/rules/sets/default/r2/patterns/{pattern.key}/")
    page.get_by_role("button", name="Reanalyse the pattern's attempts").click()
    expect(page).to_have_url(re.compile(rf"/patterns/{pattern.key}/$"))
    verdicts = Attempt.objects.filter(pk__in=attempts).values_list("verdict_outcome", "verdict_subdomain")
    assert set(verdicts) == {("attributed", "gpu.thermal")}
    page.get_by_role("link", name="Patterns", exact=True).click()
    expect(page.locator("table.patterns tbody")).not_to_contain_text("thermal violation")
