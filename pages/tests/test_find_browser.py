"""Finding things in a real browser (Playwright driving Debian's Chromium), at 1280 and 800 px: the overview's latest
failures, the header's search (a job id, a job's name, a node, a user) and the node inventory with its filters."""

import re
from datetime import timedelta

import pytest
from playwright.sync_api import Page, expect

from access.roles import VIEWER
from pages.tests.browser import sign_in

pytestmark = [pytest.mark.usefixtures("transactional_roles"), pytest.mark.browser]


@pytest.fixture
def three(make_bundle, store):
    """Three attempts on node01-node04, an hour apart: alice's two (node02's GPU fell off the bus), bob's last."""
    jobs = [("7001", "alice", "pretrain-7b", "node02"), ("7002", "alice", "finetune-llama", "node02"),
            ("7003", "bob", "eval-sweep", None)]  # fmt: skip
    return [
        store(
            make_bundle(
                job_id=job_id, user=user, name=name, faulty=faulty, start=make_bundle.start + timedelta(hours=i)
            )
        )
        for i, (job_id, user, name, faulty) in enumerate(jobs)
    ]


@pytest.mark.parametrize("width", [1280, 800])
def test_the_latest_failures_a_search_and_the_node_inventory(page: Page, live_server, three, person, width):
    person(VIEWER, "vic")
    page.set_viewport_size({"width": width, "height": 900})
    sign_in(page, live_server, "vic", person.password)

    # the overview: the latest failures first
    recent = page.locator("#recent-failures tbody tr")
    expect(recent).to_have_count(3)
    expect(recent.first).to_contain_text("7003")
    expect(recent.last).to_contain_text("7001")
    expect(page.locator("#recent-failures .pager")).to_contain_text("3 attempts")

    # the header's search: a job id leads to its attempt
    search = page.get_by_label("Search jobs, nodes and users")
    search.fill("7002")
    search.press("Enter")
    expect(page).to_have_url(re.compile(r"/search/\?q=7002$"))
    found = page.locator("#search-attempts tbody tr")
    expect(found).to_have_count(1)
    found.first.get_by_role("link", name="7002").click()
    expect(page.get_by_role("heading", name=re.compile(r"^Job 7002"))).to_be_visible()

    # part of a job's name, a user, a node
    page.get_by_label("Search jobs, nodes and users").fill("llama")
    page.get_by_label("Search jobs, nodes and users").press("Enter")
    expect(page.locator("#search-attempts tbody tr")).to_have_count(1)
    expect(page.locator("#search-users")).to_contain_text("None.")
    page.get_by_label("Job id or name, node or user").fill("ali")
    page.get_by_role("button", name="Search", exact=True).click()
    page.locator("#search-users").get_by_role("link", name="alice").click()
    expect(page.locator("#attempt-table tbody tr")).to_have_count(2)
    page.get_by_label("Search jobs, nodes and users").fill("node0")
    page.get_by_label("Search jobs, nodes and users").press("Enter")
    expect(page.locator("#search-nodes li")).to_have_count(4)
    page.get_by_label("Search jobs, nodes and users").fill("no such thing")
    page.get_by_label("Search jobs, nodes and users").press("Enter")
    expect(page.locator("#search-none")).to_have_text("Nothing matches “no such thing”.")

    # the node inventory: every node, then those named root cause
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Nodes").click()
    rows = page.locator("#node-table tbody tr")
    expect(rows).to_have_count(4)
    expect(rows.nth(1)).to_contain_text("node02")
    expect(rows.nth(1).locator("td").nth(2)).to_have_text("3")
    expect(rows.nth(1).locator("td").nth(4)).to_have_text("2")
    page.get_by_label("Root cause at least once").check()
    expect(page).to_have_url(re.compile(r"/nodes/\?fault=1$"))
    expect(rows).to_have_count(1)
    rows.first.get_by_role("link", name="root cause of 2 attempts: list them").click()
    expect(page.locator("#attempt-table tbody tr")).to_have_count(2)
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Nodes").click()
    page.get_by_label("Name").fill("04")
    expect(page).to_have_url(re.compile(r"/nodes/\?q=04$"))
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text("node04")
    assert page.evaluate("() => document.documentElement.scrollWidth <= document.documentElement.clientWidth")
