"""The triage loop in a real browser (Playwright, Chromium): picking a candidate of an ambiguous attempt makes the
verdict of record that the attempt page, the job list's node filter, the node page and the repeat-offender count
all show; a reanalysis keeps a reviewed attempt out of the queue; a review withdrawn stays in the history; a
review given with the keyboard alone (Tab and Enter)."""

import re

import pytest
from playwright.sync_api import Page, expect

from access.roles import ADMIN, TRIAGER
from demo.bundles import example
from diagnoses.models import Attempt, Review
from pages.tests.browser import sign_in
from rules import services as rules_services

pytestmark = pytest.mark.usefixtures("transactional_roles")  # transactional: the live server sees committed rows only


@pytest.fixture
def ambiguous(store, tmp_path, settings) -> Attempt:
    """Two GPU faults on two nodes within a second (the demo's): ambiguous between two candidates. Any attempt
    counts toward a repeat offender, and one root cause makes one."""
    settings.FAULTLINE_REPEAT_OFFENDER_DAYS = 36500
    settings.FAULTLINE_REPEAT_OFFENDER_COUNT = 1
    return store(example("two-hardware-faults", 3, tmp_path / "ambiguous").path)


def tab_to(page: Page, target, *, limit: int = 300) -> None:
    """Press Tab until ``target`` has the focus (from the top of the page)."""
    for _ in range(limit):
        page.keyboard.press("Tab")
        if target.evaluate("element => element === document.activeElement"):
            return
    raise AssertionError(f"Tab never reached {target}")


def test_picking_a_candidate_makes_the_verdict_everywhere(page: Page, live_server, ambiguous, person):
    candidate = ambiguous.current_diagnosis.document["candidates"][1]
    node = candidate["nodes"][0]
    cluster = ambiguous.cluster.name
    person(TRIAGER, "tess")
    sign_in(page, live_server, "tess", person.password)

    page.goto(f"{live_server.url}/attempts/{ambiguous.pk}/")
    verdict = page.locator("#verdict")
    expect(verdict.locator(".badge").first).to_have_text("ambiguous")
    expect(verdict).to_contain_text("not reviewed yet")
    picks = page.locator(".candidates li")
    expect(picks).to_have_count(2)
    expect(picks.nth(1).locator(".log-line")).not_to_be_empty()  # the candidate's evidence line
    picks.nth(1).get_by_role("button", name="This one").click()

    # the attempt page leads with the verdict, who gave it, and the engine's diagnosis beside it
    expect(page.locator(".messages")).to_contain_text("Review recorded.")
    expect(verdict.locator(".badge").first).to_have_text("attributed")
    expect(verdict).to_contain_text(f"{candidate['domain']} / {candidate['subdomain']}")
    expect(verdict.get_by_role("link", name=node, exact=True)).to_be_visible()
    expect(verdict).to_contain_text("Corrected by tess")
    expect(verdict).to_contain_text("The engine's diagnosis (below) differs: ambiguous")
    expect(verdict.locator(".badge.offender")).to_contain_text("repeat offender: 1 in")
    expect(page.locator("#reviews .review.is-active")).to_contain_text("the verdict of record")

    # the job list filtered by that node finds it, reviewed
    page.goto(f"{live_server.url}/jobs/?root_cause_node={node}")
    rows = page.locator("#attempt-table tbody tr")
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text(ambiguous.job.job_id)
    expect(rows.first).to_contain_text("reviewed")
    expect(rows.first).to_contain_text(candidate["subdomain"])

    # the node page: its own cause first, by attempt, and the repeat-offender count
    page.goto(f"{live_server.url}/nodes/{cluster}/{node}/")
    expect(page.locator("h1 .badge.offender")).to_have_text("repeat offender")
    expect(page.locator("main")).to_contain_text("Root cause of 1 attempt that ended")

    own = page.locator(".own-causes > li")
    expect(own).to_have_count(1)
    expect(own.first).to_contain_text(ambiguous.job.job_id)
    expect(own.first.locator("code").first).to_have_text(candidate["rule"])
    expect(page.locator("#causes-heading + table")).to_contain_text(candidate["subdomain"])

    # the other candidate's node was not the root cause
    other = next(name for name in ambiguous.current_diagnosis.document["candidates"][0]["nodes"] if name != node)
    page.goto(f"{live_server.url}/nodes/{cluster}/{other}/")
    expect(page.locator(".own-causes")).to_contain_text("This node is the root cause of no attempt.")
    expect(page.locator("h1 .badge.offender")).to_have_count(0)

    # the overview counts a pick of the engine's own candidate as agreeing with it, not as a correction
    assert Review.objects.get().picked_candidate
    page.goto(f"{live_server.url}/")
    expect(page.locator("#agreement")).to_have_text("100%")
    expect(page.locator("main")).to_contain_text("1 picked one of its candidates (0 corrected, 0 insufficient")


def test_a_reanalysis_keeps_a_reviewed_attempt_out_of_the_queue(page: Page, live_server, store, make_bundle, person):
    attempt = store(make_bundle(job_id="7", faulty=None))  # unattributed: in the queue
    person(ADMIN, "ada")
    sign_in(page, live_server, "ada", person.password)
    page.goto(f"{live_server.url}/triage/")
    expect(page.locator("#queue-table tbody tr")).to_have_count(1)

    page.goto(f"{live_server.url}/attempts/{attempt.pk}/")
    page.get_by_label("Insufficient evidence to tell").check()
    page.get_by_role("button", name="Record review").click()
    expect(page.locator("#verdict")).to_contain_text("Insufficient Evidence by ada")
    page.goto(f"{live_server.url}/triage/")
    expect(page.locator("#queue-table")).to_contain_text("Nothing to review.")

    # a new revision that changes nothing for this attempt, and a reanalysis of every attempt
    first = rules_services.active_revision()
    revision = rules_services.revision_create(ruleset=first.ruleset, text=first.text + "\n# reworded\n", parent=first)
    rules_services.revision_activate(revision=revision)
    page.goto(f"{live_server.url}/rules/reanalyse/")
    page.get_by_role("button", name="Reanalyse").click()
    expect(page.get_by_role("heading", name="Reanalyse 1 attempt?")).to_be_visible()
    expect(page.locator("#reanalyse-confirm")).to_contain_text("1 of them was reviewed")
    page.get_by_role("button", name="Reanalyse 1 attempt").click()
    expect(page.locator("#run-progress")).to_have_attribute("data-state", "done")

    attempt.refresh_from_db()
    assert attempt.current_diagnosis.revision == revision
    page.goto(f"{live_server.url}/triage/")
    expect(page.locator("#queue-table")).to_contain_text("Nothing to review.")
    page.goto(f"{live_server.url}/attempts/{attempt.pk}/")
    expect(page.locator("#verdict")).to_contain_text("Insufficient Evidence by ada")
    expect(page.locator("#verdict .warning")).to_have_count(0)


def test_a_withdrawn_review_stays_in_the_history_and_the_verdict_falls_back(
    page: Page, live_server, store, make_bundle, person
):
    attempt = store(make_bundle(job_id="8"))  # Xid 79 on node02
    person(TRIAGER, "tess")
    sign_in(page, live_server, "tess", person.password)
    page.goto(f"{live_server.url}/attempts/{attempt.pk}/")
    page.get_by_label("Correct it").check()
    page.get_by_label("Outcome").select_option("attributed")
    page.get_by_label("Domain:", exact=True).select_option("hardware")
    subdomains = page.get_by_label("Subdomain").locator("option")
    expect(subdomains).to_have_count(11)  # (none) and hardware's ten, no other domain's
    page.get_by_label("Subdomain").select_option("gpu.memory")
    page.get_by_label("Root-cause nodes").select_option(["node03"])
    page.get_by_role("button", name="Record review").click()
    expect(page.locator("#verdict")).to_contain_text("hardware / gpu.memory")

    assert not Review.objects.get().picked_candidate  # a correction to what the engine did not name
    page.locator("#reviews summary").filter(has_text="Withdraw…").click()  # first it asks
    expect(page.locator("#reviews details.withdraw")).to_contain_text("Withdraw it? It stays in the history")
    assert Review.objects.get().withdrawn is None
    page.locator("#reviews").get_by_role("button", name=re.compile("^Yes, withdraw the review by tess")).click()

    expect(page.locator(".messages")).to_contain_text("Review withdrawn.")
    expect(page.locator("#verdict")).to_contain_text("hardware / gpu.bus")
    expect(page.locator("#verdict")).to_contain_text("not reviewed yet")
    history = page.locator("#reviews .review")
    expect(history).to_have_count(1)
    expect(history.first).to_contain_text("withdrawn by tess")
    expect(history.first).to_contain_text("Corrected to")
    assert Review.objects.get().withdrawn is not None


def test_a_review_with_the_keyboard_alone(page: Page, live_server, ambiguous, person):
    candidate = ambiguous.current_diagnosis.document["candidates"][0]
    person(TRIAGER, "kim")
    sign_in(page, live_server, "kim", person.password)
    page.goto(f"{live_server.url}/attempts/{ambiguous.pk}/")

    button = page.locator(".candidates li").first.get_by_role("button", name="This one")
    tab_to(page, button)
    page.keyboard.press("Enter")

    expect(page.locator("#verdict")).to_contain_text("Corrected by kim")
    expect(page.locator("#verdict")).to_contain_text(f"{candidate['domain']} / {candidate['subdomain']}")
    page.locator("body").evaluate("body => document.activeElement.blur()")
    tab_to(page, page.locator("#reviews summary").filter(has_text="Withdraw…"))
    page.keyboard.press("Enter")
    withdraw = page.locator("#reviews").get_by_role("button", name=re.compile("^Yes, withdraw the review by kim"))
    tab_to(page, withdraw)
    page.keyboard.press("Enter")
    expect(page.locator(".messages")).to_contain_text("Review withdrawn.")
    expect(page.locator("#verdict .badge").first).to_have_text("ambiguous")
