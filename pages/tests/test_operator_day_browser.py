"""An operator's day in a real browser (Playwright driving Debian's Chromium against the live server), at 1280 and
800 px: uploading a bundle from the Jobs page with its progress shown (the upload slowed by Chromium's own network
throttling) and landing on its diagnosis; the upload's refusals, the API's words; an attempt page that shows the
analysis once it is done; on the demo data, a drain proposed, approved, run by the demo scheduler, refused by the
circuit breaker and resumed; a notification rule's test message.

The upload page's screenshot goes to $FAULTLINE_SCREENSHOTS (default var/screenshots/)."""

import json
import os
import re
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import call_command
from playwright.sync_api import Error as PlaywrightError
from playwright.sync_api import Page, expect

from access.roles import ADMIN, TRIAGER
from diagnoses.models import Attempt, Node
from diagnoses.services import analysis, attempts
from handoffs.models import Drain
from pages.tests.browser import sign_in
from pages.tests.test_operator_browser import NARROW, OVERFLOWING, WIDE

pytestmark = [pytest.mark.usefixtures("transactional_roles"), pytest.mark.browser]
SCREENSHOTS = Path(os.environ.get("FAULTLINE_SCREENSHOTS", Path(__file__).resolve().parents[2] / "var" / "screenshots"))
PADDING_BYTES = 12 << 20  # incompressible: the archive is as large, and its upload takes seconds when throttled


def no_sideways_scroll(page: Page) -> None:
    sizes = page.evaluate("() => [document.documentElement.scrollWidth, document.documentElement.clientWidth]")
    assert sizes[0] <= sizes[1], (page.url, sizes, page.evaluate(OVERFLOWING))


def throttle_uploads(page: Page, bytes_per_second: int) -> None:
    """Chromium's own network throttling (DevTools' Network.emulateNetworkConditions) on the page's uploads."""
    session = page.context.new_cdp_session(page)
    session.send("Network.enable")
    conditions = {"offline": False, "latency": 0, "downloadThroughput": -1, "uploadThroughput": bytes_per_second}
    session.send("Network.emulateNetworkConditions", conditions)


@pytest.mark.parametrize("viewport", [WIDE, NARROW], ids=["1280", "800"])
def test_a_triager_uploads_a_large_bundle_watches_its_progress_and_lands_on_its_diagnosis(
    page: Page, live_server, person, make_bundle, tar_gz, tmp_path, viewport
):
    bundle = make_bundle(job_id="4711")
    (bundle / "notes").mkdir()
    (bundle / "notes" / "padding.bin").write_bytes(os.urandom(PADDING_BYTES))  # a part the engine does not read
    archive = tmp_path / "job-4711.tgz"
    archive.write_bytes(tar_gz(bundle))
    person(TRIAGER, "tess")
    page.set_viewport_size(viewport)
    sign_in(page, live_server, "tess", person.password)

    page.get_by_role("link", name="Jobs", exact=True).click()
    page.get_by_role("link", name="Upload a bundle").click()
    expect(page.get_by_role("heading", name="Upload a bundle")).to_be_visible()
    no_sideways_scroll(page)
    throttle_uploads(page, 4 << 20)
    page.get_by_label("Bundle archive (.tar.gz)").set_input_files(archive)
    page.get_by_role("button", name="Upload and analyse").click()

    bar = page.locator("#upload-bar")
    expect(bar).to_be_visible()
    expect(page.get_by_role("button", name="Upload and analyse")).to_be_disabled()
    shares, shot = [], viewport != WIDE
    while page.url.endswith("/upload/") and len(shares) < 400:  # what the bar shows while the bytes go
        try:
            shares.append(page.evaluate("() => Number(document.getElementById('upload-bar')?.value ?? 100)"))
        except PlaywrightError:  # the page went on to the attempt's meanwhile
            break
        if 20 <= shares[-1] <= 80 and not shot:
            SCREENSHOTS.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=SCREENSHOTS / "upload.png")
            shot = True
        page.wait_for_timeout(50)
    assert any(0 < share < 100 for share in shares), shares  # progress seen on the way
    assert shares == sorted(shares), shares

    attempt = Attempt.objects.get(job__job_id="4711")
    expect(page).to_have_url(re.compile(rf"/attempts/{attempt.pk}/$"))
    expect(page.get_by_text("Job 4711 on dgx-a stored; its analysis is")).to_be_visible()
    expect(page.get_by_role("heading", name="The engine's diagnosis")).to_be_visible()  # analysed in-process
    expect(page.locator(".facts")).to_contain_text("gpu.bus")
    no_sideways_scroll(page)


@pytest.mark.parametrize("viewport", [WIDE, NARROW], ids=["1280", "800"])
def test_the_upload_refuses_in_the_apis_words(page: Page, live_server, person, make_bundle, tar_gz, tmp_path, viewport):
    person(TRIAGER, "tess")
    page.set_viewport_size(viewport)
    sign_in(page, live_server, "tess", person.password)
    page.goto(f"{live_server.url}/upload/")
    field, send = page.get_by_label("Bundle archive (.tar.gz)"), page.get_by_role("button", name="Upload and analyse")
    problem = page.get_by_role("alert")

    (tmp_path / "notes.tgz").write_text("not an archive at all")
    field.set_input_files(tmp_path / "notes.tgz")
    send.click()
    expect(problem).to_contain_text("Refused: not a gzip-compressed archive")
    expect(send).to_be_enabled()

    archive = tmp_path / "b.tgz"
    archive.write_bytes(tar_gz(make_bundle(job_id="12")))
    field.set_input_files(archive)
    send.click()
    expect(page).to_have_url(re.compile(r"/attempts/\d+/$"))
    stored = Attempt.objects.get(job__job_id="12")

    page.goto(f"{live_server.url}/upload/")
    page.get_by_label("Bundle archive (.tar.gz)").set_input_files(archive)
    page.get_by_role("button", name="Upload and analyse").click()
    expect(page.get_by_role("alert")).to_contain_text("Refused: attempt 0 of job 12 on cluster dgx-a is already stored")
    page.get_by_role("link", name="The attempt already stored").click()
    expect(page).to_have_url(re.compile(rf"/attempts/{stored.pk}/$"))

    # past the limit: refused before a byte is sent, with the server's words (the form on the page carries them)
    page.goto(f"{live_server.url}/upload/")
    page.evaluate("() => { document.getElementById('upload-form').dataset.maxBytes = '100'; }")
    page.evaluate(
        "() => { document.getElementById('upload-form').dataset.tooLarge = 'the upload is larger than 100 bytes'; }"
    )
    page.get_by_label("Bundle archive (.tar.gz)").set_input_files(archive)
    page.get_by_role("button", name="Upload and analyse").click()
    expect(page.get_by_role("alert")).to_have_text("Refused: the upload is larger than 100 bytes")
    assert Attempt.objects.count() == 1
    no_sideways_scroll(page)


def test_the_attempt_page_shows_the_diagnosis_once_the_analysis_is_done(page: Page, live_server, person, make_bundle):
    """A worker elsewhere analyses the attempt while its page is open: the page shows the diagnosis by itself."""
    attempt = attempts.attempt_ingest_directory(path=make_bundle(job_id="31"), analyse=False)
    Attempt.objects.filter(pk=attempt.pk).update(analysis_state=Attempt.Analysis.QUEUED)
    person(TRIAGER, "tess")
    sign_in(page, live_server, "tess", person.password)
    page.goto(f"{live_server.url}/attempts/{attempt.pk}/")
    expect(page.locator("#analysis-pending")).to_contain_text("queued")
    expect(page.locator("#analysis-pending")).to_contain_text(
        "This page shows the diagnosis as soon as it is recorded."
    )

    analysis.attempt_analyse(attempt_id=attempt.pk)
    expect(page.get_by_role("heading", name="The engine's diagnosis")).to_be_visible(timeout=15_000)
    expect(page.locator("#analysis-pending")).to_have_count(0)


def test_an_admin_drains_through_the_demo_scheduler_until_the_circuit_breaker_holds(page: Page, live_server, person):
    """make run's demo data: dgx-a's scheduler is the demo scheduler, labelled so. A drain of a repeat offender is
    proposed from its attempt, approved and run (recorded in the demo's file); a second one too; the third is refused
    by the circuit breaker (at most 2 at once); one is resumed; then the third goes through. At 1280 px, then 800."""
    call_command("load_demo", verbosity=0)
    person(ADMIN, "ada")
    sign_in(page, live_server, "ada", person.password)
    offenders = ["dgx-b200-0417", "dgx-b200-0423"]  # the demo's repeat offenders, and any other node of dgx-a
    offenders.append(Node.objects.filter(cluster__name="dgx-a").exclude(name__in=offenders).order_by("name")[0].name)

    page.get_by_role("link", name="Clusters").click()
    expect(page.locator(".demo-note")).to_contain_text("A demo scheduler: drains and resumes are recorded in")
    attempt = Attempt.objects.filter(cluster__name="dgx-a", verdict_nodes__name=offenders[0]).order_by("pk").first()
    page.goto(f"{live_server.url}/attempts/{attempt.pk}/")
    panel = page.locator("#drains")
    expect(panel.locator(".demo-note")).to_contain_text("dgx-a's scheduler is the demo scheduler")
    panel.get_by_role("button", name=f"Propose draining {offenders[0]}").click()
    expect(page.get_by_text(f"Draining {offenders[0]} proposed; an admin approves it.")).to_be_visible()
    for node in offenders[1:]:
        page.goto(f"{live_server.url}/nodes/dgx-a/{node}/")
        page.locator("#drains").get_by_label("Reason").fill("flaky, per the demo")
        page.locator("#drains").get_by_role("button", name=f"Propose draining {node}").click()
        expect(page.get_by_text(f"Draining {node} proposed; an admin approves it.")).to_be_visible()

    page.get_by_role("link", name="Drains").first.click()
    expect(page.locator("main p.muted").first).to_contain_text("dgx-a: a demo scheduler records each drain")
    for node in offenders[:2]:
        page.get_by_role("button", name=f"Approve and drain {node}").click()
        expect(page.get_by_text(f"{node}: drain approved, its command queued.")).to_be_visible()
    holding = page.locator("#holding-heading + table")
    expect(holding).to_contain_text("demo scheduler, no node touched")
    page.get_by_role("button", name=f"Approve and drain {offenders[2]}").click()
    expect(page.get_by_text("circuit breaker: 2 node(s) of dgx-a already drained or being drained")).to_be_visible()
    no_sideways_scroll(page)

    page.set_viewport_size(NARROW)
    page.get_by_role("button", name=f"Resume {offenders[0]}").click()
    expect(page.get_by_text(f"{offenders[0]}: resumed.")).to_be_visible()
    page.get_by_role("button", name=f"Approve and drain {offenders[2]}").click()
    expect(page.get_by_text(f"{offenders[2]}: drain approved, its command queued.")).to_be_visible()
    no_sideways_scroll(page)

    states = dict(Drain.objects.values_list("node__name", "state"))
    assert states == {offenders[0]: "resumed", offenders[1]: "drained", offenders[2]: "drained"}
    record = Path(settings.FAULTLINE_BUNDLE_ROOT).parent / "demo-scheduler" / ".demo-nodes.json"
    logged = json.loads(record.read_text())["log"]
    assert [(entry["node"], entry["action"]) for entry in logged] == [
        (offenders[0], "drain"), (offenders[1], "drain"), (offenders[0], "resume"), (offenders[2], "drain"),
    ]  # fmt: skip


@pytest.mark.parametrize("viewport", [WIDE, NARROW], ids=["1280", "800"])
def test_an_admin_sends_a_rules_test_message(page: Page, live_server, person, monkeypatch, webhook_receiver, viewport):
    from handoffs.services import notifications

    monkeypatch.setenv("FAULTLINE_TEST_HOOK", f"{webhook_receiver.url}/hook")
    notifications.rule_save(name="on call", channel="webhook", url_env="FAULTLINE_TEST_HOOK")
    person(ADMIN, "ada")
    page.set_viewport_size(viewport)
    sign_in(page, live_server, "ada", person.password)
    page.get_by_role("link", name="Notifications").click()
    page.get_by_role("button", name="Send a test of on call").click()
    expect(page.get_by_text("Test message of on call sent: HTTP 200 ok")).to_be_visible()
    assert (
        webhook_receiver.requests[0].json()["summary"]
        == "Faultline: a test of the notification rule on call, sent by ada"
    )
    webhook_receiver.statuses.append(500)
    page.get_by_role("button", name="Send a test of on call").click()
    expect(page.get_by_text("The test message of on call failed: HTTP 500 unavailable")).to_be_visible()
    no_sideways_scroll(page)
