"""The hand-offs in a real browser (Playwright driving Debian's Chromium against the live server): a triager
proposes draining the root-cause node from the attempt page, an admin approves it on the Drains page (the cluster's
Slurm commands run through ``true`` here) and resumes it from the node page; an admin adds a notification rule on the
Notifications page, and an attempt stored then is notified, its delivery log showing the failed try and the retry.

Screenshots of the Drains and Notifications pages go to $FAULTLINE_SCREENSHOTS (default var/screenshots/)."""

import os
import re
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from access.roles import ADMIN, TRIAGER
from diagnoses.models import Cluster
from handoffs.models import Drain
from pages.tests.browser import sign_in

pytestmark = pytest.mark.usefixtures("transactional_roles")  # transactional: the live server sees committed rows only
SCREENSHOTS = Path(os.environ.get("FAULTLINE_SCREENSHOTS", Path(__file__).resolve().parents[2] / "var" / "screenshots"))


def test_propose_approve_and_resume_a_drain_in_the_browser(page: Page, live_server, person, make_bundle, store):
    attempt = store(make_bundle(job_id="512"))
    Cluster.objects.filter(pk=attempt.cluster_id).update(
        connector="slurm", scheduler_settings={"command_prefix": ["true"]}
    )
    person(TRIAGER, "tess")
    person(ADMIN, "ada")

    sign_in(page, live_server, "tess", person.password)
    page.goto(f"{live_server.url}/attempts/{attempt.pk}/")
    panel = page.locator("#drains")
    expect(panel.get_by_label("Reason")).to_have_value("gpu.bus (job 512)")
    panel.get_by_label("Reason").fill("Xid 79: GPU fell off the bus")
    panel.get_by_role("button", name="Propose draining node02").click()
    expect(page.get_by_text("Draining node02 proposed; an admin approves it.")).to_be_visible()
    expect(panel.locator(".badge", has_text="proposed")).to_be_visible()
    expect(panel.get_by_role("button", name=re.compile("Approve"))).to_have_count(0)

    page.context.clear_cookies()
    sign_in(page, live_server, "ada", person.password)
    page.get_by_role("link", name="Drains").click()
    page.get_by_role("button", name="Approve and drain node02").click()
    expect(page.get_by_text("node02: drain approved, its command queued.")).to_be_visible()
    expect(page.locator("#holding-heading + table .badge")).to_have_text("drained")
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=SCREENSHOTS / "drains.png", full_page=True)
    page.get_by_role("link", name="node02").first.click()
    page.locator("#drains").get_by_role("button", name="Resume node02").click()
    expect(page.get_by_text("node02: resumed.")).to_be_visible()

    drain = Drain.objects.get()
    assert (drain.state, drain.proposed_by.username, drain.decided_by.username, drain.resumed_by.username) == (
        "resumed", "tess", "ada", "ada")  # fmt: skip
    assert drain.reason == "Xid 79: GPU fell off the bus"


def test_an_admin_adds_a_notification_rule_and_reads_the_delivery_log(
    page: Page, live_server, person, monkeypatch, webhook_receiver, make_bundle, store
):
    from handoffs.models import Incident, NotificationRule
    from handoffs.tasks import deliver_incident

    monkeypatch.setenv("FAULTLINE_TEST_HOOK", f"{webhook_receiver.url}/hook")
    person(ADMIN, "ada")
    sign_in(page, live_server, "ada", person.password)
    page.get_by_role("link", name="Notifications").click()
    page.get_by_text("New rule").click()
    form = page.get_by_role("form", name="New notification rule")
    form.get_by_label("Name").fill("gpu faults")
    form.get_by_label("Subdomains").fill("gpu.bus, gpu.memory")
    form.get_by_label("Url env").fill("FAULTLINE_TEST_HOOK")
    form.get_by_label("Group seconds").fill("0")
    form.get_by_role("button", name="Add rule").click()
    expect(page.get_by_text("Notification rule gpu faults saved.")).to_be_visible()
    assert NotificationRule.objects.get().subdomains == ["gpu.bus", "gpu.memory"]

    store(make_bundle(job_id="512"))  # committed: its announcement runs the hand-offs, in-process (no broker)
    assert Incident.objects.get().events == 1
    webhook_receiver.statuses.append(503)
    monkeypatch.setitem(deliver_incident.app.conf, "task_eager_propagates", False)  # retried in-process
    deliver_incident.apply(args=[Incident.objects.get().pk])
    page.reload()
    log = page.locator("#deliveries-heading + table tbody tr")
    expect(log).to_have_count(2)
    expect(log.nth(0)).to_contain_text("sent")
    expect(log.nth(1)).to_contain_text("HTTP 503")
    expect(page.locator("#incidents-heading + table")).to_contain_text("job 512 on dgx-a")
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=SCREENSHOTS / "notifications.png", full_page=True)
