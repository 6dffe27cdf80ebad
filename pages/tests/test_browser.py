"""The pages in a real browser (Playwright driving Debian's Chromium against the live server):
sign in, filter the job list, read an attempt's timeline and evidence, review, and the viewer's limits.

Screenshots of each page on the demo data are written to $FAULTLINE_SCREENSHOTS (default var/screenshots/);
`make screenshots` refreshes the ones in docs/screenshots/ that the README shows.
"""

import os
import re
from pathlib import Path

import pytest
from django.core.management import call_command
from playwright.sync_api import Page, expect

from access.roles import TRIAGER, VIEWER
from diagnoses.models import Attempt, Review
from pages.tests.browser import sign_in
from pages.views import lists

pytestmark = pytest.mark.usefixtures("transactional_roles")  # transactional: the live server sees committed rows only
SCREENSHOTS = Path(os.environ.get("FAULTLINE_SCREENSHOTS", Path(__file__).resolve().parents[2] / "var" / "screenshots"))


def shoot(page: Page, name: str) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=SCREENSHOTS / f"{name}.png")


def test_a_triager_works_through_the_demo_data(page: Page, live_server, person):
    call_command("load_demo", verbosity=0)
    person(TRIAGER, "tess")
    sign_in(page, live_server, "tess", person.password)
    expect(page.locator("#outcome-chart-title")).to_contain_text("attempts in 30 days")
    shoot(page, "overview")

    # the job list: a filter updates the table and the address; the back button undoes it
    page.get_by_role("link", name="Jobs", exact=True).click()
    rows = page.locator("#attempt-table tbody tr")
    expect(rows).to_have_count(min(Attempt.objects.count(), lists.PAGE_SIZE))
    shoot(page, "jobs")
    page.get_by_label("Outcome").select_option("unattributed")
    expect(page).to_have_url(re.compile(r"/jobs/\?outcome=unattributed&sort=-end$"))
    expect(rows).to_have_count(Attempt.objects.filter(current_diagnosis__outcome="unattributed").count())
    expect(rows.locator(".badge")).to_have_text(["unattributed"] * rows.count())
    page.go_back()
    expect(page).to_have_url(re.compile(r"/jobs/$"))
    expect(rows).to_have_count(min(Attempt.objects.count(), lists.PAGE_SIZE))
    expect(page.get_by_label("Outcome")).to_have_value("")
    page.get_by_label("Domain", exact=True).select_option("hardware")
    page.get_by_label("Subdomain").fill("gpu.bus")
    page.get_by_label("Subdomain").press("Enter")
    expect(page).to_have_url(re.compile(r"domain=hardware&subdomain=gpu.bus"))
    expect(rows).to_have_count(Attempt.objects.filter(current_diagnosis__subdomain="gpu.bus").count())

    # an attempt: the root cause is highlighted on the timeline; a mark leads to its evidence line
    rows.first.locator("a").first.click()
    expect(page.get_by_role("heading", name="Timeline")).to_be_visible()
    root_lane = page.locator(".timeline .lane.is-root-cause")
    expect(root_lane).to_have_count(1)
    mark = root_lane.locator(".mark.role-root_cause").first
    expect(mark).to_have_attribute(
        "aria-label", re.compile(r"^\S+: root cause: [\w.]+ (at (about )?|between )\d\d:\d\d:\d\d")
    )
    mark.focus()
    expect(page.locator("#timeline-line")).to_contain_text(mark.get_attribute("data-line"))
    mark.click()
    selected = page.locator(".evidence-item.is-selected")
    expect(selected).to_have_count(1)
    expect(selected).to_have_class(re.compile(r"is-root_cause"))
    expect(selected).to_be_in_viewport()
    expect(selected).to_be_focused()
    line = selected.locator(".log-line").inner_text()
    selected.get_by_text("Surrounding lines").click()
    expect(selected.locator(".context-lines li.hit")).to_have_text(line)
    assert selected.locator(".context-lines li").count() > 20  # lines around it (41 unless near an end)
    page.locator("#summary").evaluate("heading => heading.scrollIntoView()")
    shoot(page, "attempt")

    # the node at fault
    page.locator(".facts").get_by_role("link").first.click()
    expect(page.get_by_role("heading", name=re.compile(r"^Node "))).to_be_visible()
    shoot(page, "node")

    # the queue: review one, it leaves the queue and shows as recently reviewed
    page.get_by_role("link", name="Triage queue").click()
    queue = page.locator("#queue-table tbody tr")
    waiting = Attempt.objects.filter(needs_review=True).count()
    expect(queue).to_have_count(waiting)
    shoot(page, "queue")
    job = queue.first.locator("a").first.inner_text()
    queue.first.locator("a").first.click()
    page.get_by_label("Insufficient evidence to tell").check()
    page.get_by_label("Note").fill("needs the switch logs")
    page.get_by_role("button", name="Record review").click()
    expect(page.locator(".messages")).to_have_text("Review recorded.")
    expect(page.locator("#reviews")).to_contain_text("Insufficient Evidence by tess")
    page.locator("#reviews").evaluate("section => section.scrollIntoView()")
    shoot(page, "review")
    page.get_by_role("link", name="Triage queue").click()
    expect(queue).to_have_count(waiting - 1)
    expect(page.locator("#queue-table")).not_to_contain_text(job)
    page.get_by_role("link", name="Recently reviewed").click()
    expect(page).to_have_url(re.compile(r"\?tab=reviewed$"))
    expect(page.locator("#queue-table tbody tr").first).to_contain_text(job)
    assert Review.objects.get().note == "needs the switch logs"


def test_a_viewer_reads_but_cannot_review_and_log_text_stays_text(
    page: Page, live_server, make_bundle, store, person, replace_in
):
    bundle = make_bundle(job_id="1")
    replace_in(bundle, "logs/node02/syslog.log", "name=<unknown>", "name=<script>alert('log')</script>")
    attempt = store(bundle)
    person(VIEWER, "vic")
    dialogs = []
    page.on("dialog", lambda dialog: dialogs.append(dialog.message) or dialog.dismiss())
    sign_in(page, live_server, "vic", person.password)

    page.goto(f"{live_server.url}/attempts/{attempt.pk}/")
    expect(page.locator("#reviews")).to_contain_text("Not reviewed yet.")
    expect(page.locator(".review-form")).to_have_count(0)
    token = page.locator("body").get_attribute("hx-headers")
    status = page.evaluate(
        """([url, headers]) => fetch(url, {method: "POST", headers: JSON.parse(headers),
               body: new URLSearchParams({verdict: "confirmed"})}).then(r => r.status)""",
        [f"/attempts/{attempt.pk}/review", token],
    )
    assert status == 403
    assert not Review.objects.exists()

    evidence = page.locator(".evidence-item.is-root_cause .log-line").first
    expect(evidence).to_contain_text("name=<script>alert('log')</script>, GPU has fallen off the bus.")
    page.goto(f"{live_server.url}/nodes/dgx-a/node02/")
    expect(page.locator(".own-causes .log-line").first).to_contain_text("<script>alert('log')</script>")
    assert dialogs == []
