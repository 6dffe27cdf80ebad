"""The rule workbench in a real browser (Debian's Chromium through Playwright), on the demo data.

The story of issue 5: the demo set's GPU thermal slowdown is unattributed by the default pack; an
operator writes a rule for it in the editor (an error is shown at its line, then fixed), sees it
match in the explorer, tries it on the attempt, backtests it, activates it and reanalyses, and the
attempt becomes attributed (hardware/gpu.thermal) by the new revision. Viewers and triagers cannot
change rules.
"""

import re

import pytest
from django.core.management import call_command
from playwright.sync_api import expect

from access.roles import RULE_EDITOR, TRIAGER, VIEWER
from diagnoses import bundle_store
from diagnoses.models import Attempt
from rules.models import Activation, RuleSetRevision
from rules.outline import file_of_line, outline
from rules.services import active_revision
from workbench.tests.workbench import THERMAL_RULE

SET_TEXT = "text => document.querySelector('.CodeMirror').CodeMirror.setValue(text)"  # as typing would

pytestmark = [pytest.mark.usefixtures("transactional_roles"), pytest.mark.browser]


@pytest.fixture
def demo(person):
    """The demo set, analysed; people of each role. Its GPU thermal slowdown recurs (docs/leads.md: a failure
    pattern): ``thermal`` is the newest of those attempts, ``thermals`` all of them."""
    call_command("load_demo", verbosity=0)
    thermals = [
        attempt
        for attempt in Attempt.objects.filter(current_diagnosis__outcome="unattributed")
        if any(
            "thermal violation" in path.read_text()
            for path in bundle_store.path_of(attempt.bundle).glob("logs/*/syslog.log")
        )
    ]
    return {
        "thermal": thermals[0],
        "thermals": thermals,
        "editor": person(RULE_EDITOR, "editor"),
        "viewer": person(VIEWER, "viewer"),
        "triager": person(TRIAGER, "triager"),
    }


def sign_in(page, base: str, username: str, password: str):
    page.goto(f"{base}/accounts/login/")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", password)
    page.click("button[type=submit], input[type=submit]")
    expect(page.locator("header .who")).to_contain_text(username)


def thermal_line(attempt: Attempt) -> tuple[str, int]:
    """The first DCGM thermal warning of the attempt's bundle: (its ref, its line number)."""
    for path in sorted(bundle_store.path_of(attempt.bundle).glob("logs/*/syslog.log")):
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if "thermal violation" in line:
                return f"logs/{path.parent.name}/syslog.log:{number}", number
    raise AssertionError("the demo's thermal attempt has no DCGM warning")


def test_an_operator_writes_a_rule_for_the_unattributed_thermal_slowdown(page, live_server, demo, person):
    base, thermal = live_server.url, demo["thermal"]
    first = active_revision()
    sign_in(page, base, "editor", person.password)

    # The editor: an error is shown at its line, with the reason; fixed, the draft is saved.
    page.goto(f"{base}/rules/")
    page.get_by_role("link", name="default").click()
    page.get_by_role("link", name="Edit a new draft").click()
    broken = first.text + THERMAL_RULE.replace("domain: hardware", "domain: hardwre")
    bad_line = broken.splitlines().index("    domain: hardwre") + 1
    expect(page.locator(".CodeMirror")).to_be_visible()
    page.evaluate(SET_TEXT, broken)
    expect(page.locator("#editor-errors li.rule-error")).to_have_count(1)
    page.locator("#editor-errors li.rule-error a").click()  # to its line, marked (the editor draws what it shows)
    expect(page.locator(".CodeMirror .rule-mark")).to_have_count(1)
    expect(page.locator("#editor-errors")).to_contain_text(
        f"line {bad_line} of {file_of_line(outline(broken, rules=False), bad_line).name}, rule site.gpu.thermal, "
        "field domain"
    )
    expect(page.locator("#editor-errors")).to_contain_text("unknown domain 'hardwre'")
    page.evaluate(SET_TEXT, first.text + THERMAL_RULE)
    expect(page.locator("#editor-errors")).to_contain_text("The rule set loads")
    expect(page.locator(".CodeMirror .rule-mark")).to_have_count(0)
    page.fill("input[name=message]", "DCGM thermal violations are a cause")
    page.get_by_role("button", name="Save draft").click()
    expect(page).to_have_url(re.compile(r"/rules/sets/default/r2/$"))
    draft = RuleSetRevision.objects.get(number=2)
    assert (draft.active, draft.author.username, draft.parent) == (False, "editor", first)

    # The explorer: the warning picked from the attempt's bundle matches the new rule, with its capture.
    ref, _ = thermal_line(thermal)
    page.get_by_role("link", name="Explorer").click()
    page.get_by_text("Pick a line from an attempt").click()
    page.select_option("select[name=attempt]", str(thermal.pk))
    page.fill("input[name=ref]", ref)
    page.get_by_role("button", name="Show").click()
    expect(page.locator("#explore-matches tr.match")).to_have_count(1)
    expect(page.locator("#explore-matches tr.match")).to_contain_text("site.gpu.thermal")
    expect(page.locator("#explore-matches tr.match")).to_contain_text(re.compile(r"gpu=\d"))
    page.fill("input[name=rule]", "gpu.xid.memory")
    page.get_by_role("button", name="Explore").click()
    expect(page.locator("#explore-why .failed-condition")).to_have_attribute("data-condition", "pattern")

    # Try it on the attempt: unattributed before, hardware/gpu.thermal with the draft.
    page.get_by_role("link", name="Try on an attempt").click()
    page.select_option("select[name=attempt]", str(thermal.pk))
    page.get_by_role("button", name="Run r2 on it").click()
    expect(page.locator("#try-changes tr.change").first).to_contain_text("unattributed")
    expect(page.locator("#try-changes")).to_contain_text("gpu.thermal")
    expect(page.locator("#try-draft")).to_contain_text("site.gpu.thermal")

    # The backtest over the cluster: exactly the thermal attempts change.
    page.get_by_role("link", name="Backtest").click()
    page.select_option("select[name=cluster]", "dgx-a")
    page.get_by_role("button", name="Start the backtest").click()
    expect(page.locator("#run-progress")).to_have_attribute("data-state", "done")
    changes = len(demo["thermals"])
    expect(page.locator("#backtest-summary")).to_contain_text(re.compile(rf"^{changes} of \d+ diagnoses would change"))
    expect(page.locator("#backtest-changes tr.change")).to_have_count(changes)
    changed = page.locator("#backtest-changes tr.change").evaluate_all("rows => rows.map(r => r.dataset.attempt)")
    assert sorted(changed) == sorted(str(attempt.pk) for attempt in demo["thermals"])
    expect(page.locator("#backtest-changes tr.change").first).to_contain_text("hardware/gpu.thermal")

    # Activate it, with a message; the audit log shows who did it.
    page.goto(f"{base}/rules/sets/default/r2/")
    page.fill("#activate-form input[name=message]", "thermal rule from the workbench")
    page.get_by_role("button", name="Activate").click()
    expect(page.locator("#revision-2")).to_contain_text("active")
    expect(page.locator("#activations tbody tr").first).to_contain_text("editor")
    expect(page.locator("#activations tbody tr").first).to_contain_text("thermal rule from the workbench")

    # Reanalyse the unattributed attempts: the thermal attempt's diagnosis is now r2's.
    page.goto(f"{base}/rules/reanalyse/")
    page.select_option("select[name=outcome]", "unattributed")
    page.get_by_role("button", name="Reanalyse").click()
    expect(page.get_by_role("heading", name=re.compile(r"Reanalyse \d+ attempts?\?"))).to_be_visible()
    page.get_by_role("button", name=re.compile(r"^Reanalyse \d+ attempt")).click()
    expect(page.locator("#run-progress")).to_have_attribute("data-state", "done")
    thermal.refresh_from_db()
    diagnosis = thermal.current_diagnosis
    assert (diagnosis.outcome, diagnosis.domain, diagnosis.subdomain, diagnosis.revision) == (
        "attributed", "hardware", "gpu.thermal", draft
    )  # fmt: skip
    page.goto(f"{base}/rules/sets/default/r2/try?attempt={thermal.pk}")
    expect(page.locator("#try-stored")).to_contain_text("Stored (r2)")
    expect(page.locator("#try-stored")).to_contain_text("hardware/gpu.thermal")
    expect(page.locator("#no-change")).to_be_visible()


@pytest.mark.parametrize("role", ["viewer", "triager"])
def test_viewers_and_triagers_cannot_change_rules_in_the_browser(page, live_server, demo, role, person):
    base = live_server.url
    first = active_revision()
    sign_in(page, base, role, person.password)

    page.goto(f"{base}/rules/sets/default/r1/")
    expect(page.get_by_role("heading", name=re.compile("revision 1"))).to_be_visible()
    expect(page.locator("#activate-form")).to_have_count(0)
    expect(page.get_by_role("link", name="Edit a new draft")).to_have_count(0)
    assert page.goto(f"{base}/rules/sets/default/edit").status == 403
    token = page.context.cookies()
    csrf = next(cookie["value"] for cookie in token if cookie["name"] == "csrftoken")
    posted = page.request.post(
        f"{base}/rules/sets/default/r1/activate", form={"message": "x"}, headers={"X-CSRFToken": csrf}
    )
    api = page.request.post(
        f"{base}/api/v1/revisions",
        data={"ruleset": "default", "text": first.text + THERMAL_RULE},
        headers={"X-CSRFToken": csrf, "Referer": base},
    )
    assert (posted.status, api.status) == (403, 403)
    assert RuleSetRevision.objects.count() == 1
    assert Activation.objects.count() == 1
