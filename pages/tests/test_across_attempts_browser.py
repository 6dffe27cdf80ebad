"""Across attempts in a real browser, on the demo data: a requeue linked both ways and the job's page, and "What
changed" for the job that worked before its NCCL upgrade."""

import pytest
from django.core.management import call_command
from playwright.sync_api import Page, expect

from access.roles import VIEWER
from diagnoses import selectors
from diagnoses.models import Attempt
from pages.tests.browser import sign_in
from pages.tests.test_operator_browser import NARROW, WIDE
from pages.tests.test_operator_day_browser import no_sideways_scroll

pytestmark = pytest.mark.usefixtures("transactional_roles")  # transactional: the live server sees committed rows only


def test_a_viewer_follows_a_job_across_its_attempts_and_sees_what_changed(page: Page, live_server, person):
    call_command("load_demo", verbosity=0)
    person(VIEWER, "vic")
    sign_in(page, live_server, "vic", person.password)

    # the job that worked: its failed attempt links the good one and "What changed"
    failed = Attempt.objects.select_related("job").get(number=1, state="FAILED")
    good = Attempt.objects.get(job=failed.job, number=0)
    page.goto(f"{live_server.url}/attempts/{failed.pk}/")
    sequence = page.locator("#job-attempts")
    expect(sequence.locator("tr.current")).to_contain_text("#1 (this one)")
    expect(sequence.get_by_role("link", name="#0")).to_have_attribute("href", f"/attempts/{good.pk}/")
    link = page.get_by_role("link", name="What changed since it last worked")
    link.focus()
    page.keyboard.press("Enter")  # by keyboard
    expect(page.get_by_role("heading", name="What changed")).to_be_visible()
    for viewport in (WIDE, NARROW):  # the log lines of the step and template rows wrap, never scroll sideways
        page.set_viewport_size(viewport)
        no_sideways_scroll(page)
    first = page.locator("#changes-software tbody tr").first
    expect(first).to_have_class("changed")
    expect(first).to_contain_text("NCCL")
    expect(first).to_contain_text("2.21.5")
    expect(first).to_contain_text("2.23.4")
    expect(page.locator("#changes-nodes")).to_contain_text("Added:")
    reached = selectors.attempt_changes(failed)["step"]  # the demo's training loops print their steps
    progress = page.locator("#changes-progress")
    for one in (reached["good"], reached["now"]):
        expect(progress).to_contain_text(f"{one['step']} of {one['of']}" if one["of"] else str(one["step"]))

    # the requeue: the first attempt links the second, which links back; the job's page shows both in order
    requeued = Attempt.objects.select_related("job").get(number=1, state="TIMEOUT")
    first_run = Attempt.objects.get(job=requeued.job, number=0)
    page.goto(f"{live_server.url}/attempts/{first_run.pk}/")
    page.locator("#job-attempts").get_by_role("link", name="#1").click()
    expect(page).to_have_url(f"{live_server.url}/attempts/{requeued.pk}/")
    expect(page.locator("#job-attempts").get_by_role("link", name="#0")).to_be_visible()
    page.locator("h1").get_by_role("link", name=requeued.job.job_id).click()
    rows = page.locator("#job-attempts tbody tr")
    expect(rows).to_have_count(2)
    expect(rows.nth(0)).to_contain_text("NODE_FAIL")
    expect(rows.nth(1)).to_contain_text("TIMEOUT")
