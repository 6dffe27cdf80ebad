"""The attempt page's Flight Recorder part in a real browser: the collective a hang stopped in, and a culprit that
leads to its node's lane on the timeline."""

import re
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from access.roles import VIEWER
from pages.tests.test_browser import shoot, sign_in

pytestmark = pytest.mark.usefixtures("transactional_roles")  # transactional: the live server sees committed rows only
STRAGGLER = Path(__file__).resolve().parents[2] / "engine" / "flight_recorder" / "tests" / "dumps" / "straggler"


def test_the_culprit_leads_to_its_nodes_lane(page: Page, live_server, person, write_bundle, store, tmp_path):
    nodes = [f"gpu-{index:02d}" for index in range(1, 5)]
    bundle = write_bundle(
        tmp_path / "straggler",
        logs={"torchrun.log": (STRAGGLER / "torchrun.log").read_text()},
        traces={path.name: path.read_bytes() for path in STRAGGLER.glob("rank_*")},
        nodes=nodes, ranks={str(rank): nodes[3 - rank] for rank in range(4)}, job_id="hang",
        start="2026-12-03T12:45:00Z", end="2026-12-03T12:55:00Z",
    )  # fmt: skip
    attempt = store(bundle)
    person(VIEWER, "vera")
    sign_in(page, live_server, "vera", person.password)

    page.goto(f"{live_server.url}/attempts/{attempt.pk}/")
    section = page.locator("#collectives")
    expect(section.get_by_role("heading", name=re.compile(r"Stopped in gloo:all_reduce #4"))).to_be_visible()
    expect(section.locator("tr.rank-never_arrived td.mono")).to_have_text("2")
    expect(section.locator("tr.rank-waited td.mono")).to_have_text("0-1, 3")
    shoot(page, "attempt-collective-hang")

    section.get_by_role("link", name="gpu-02").click()  # rank 2 ran on gpu-02
    expect(page).to_have_url(re.compile(r"#lane-gpu-02$"))
    expect(page.locator("#lane-gpu-02")).to_be_in_viewport()
    expect(page.locator(".timeline .lane.is-root-cause .lane-label.full")).to_have_text("gpu-02 ◆")
