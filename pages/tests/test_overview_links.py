"""The overview's links keep its window and lead to the job list of what they count: each chart bar to that day's
attempts of its series, "none" (no domain) and "not analysed" (outcome none) included."""

import html
import re
from datetime import timedelta

import pytest
from django.utils import timezone

from access.roles import VIEWER
from diagnoses.models import Attempt
from diagnoses.services.attempts import attempt_ingest_directory
from diagnoses.services.verdict_days import verdict_days_rebuild


@pytest.fixture
def viewer(client_for):
    return client_for(VIEWER)


@pytest.fixture
def three(make_bundle, store):
    """Attributed (2 days ago), unattributed: no domain (2 days ago), not analysed (5 days ago); one older."""
    now = timezone.now()
    attributed = store(make_bundle(job_id="1"))
    quiet = store(make_bundle(job_id="2", faulty=None))
    waiting = attempt_ingest_directory(path=make_bundle(job_id="3"), analyse=False)
    old = store(make_bundle(job_id="4"))
    for attempt, days in ((attributed, 2), (quiet, 2), (waiting, 5), (old, 20)):
        Attempt.objects.filter(pk=attempt.pk).update(end=now - timedelta(days=days))
    verdict_days_rebuild()  # the ends moved by hand, not by a service: the overview's rollup built again
    return {"attributed": attributed, "quiet": quiet, "waiting": waiting}


def jobs_in(page: str) -> list[str]:
    return re.findall(r'<a href="/attempts/\d+/">(\w+)</a>', page)


def test_every_bar_lists_the_attempts_it_counts(viewer, three):
    page = viewer.get("/", {"days": "7"}).content.decode()
    bars = re.findall(r'<a class="bar" href="([^"]+)" aria-label="[\d-]+: (\d+) ([\w ]+): list them">', page)
    assert {series for _, _, series in bars} == {"attributed", "unattributed", "not analysed", "hardware", "none"}
    for href, count, series in bars:
        listed = jobs_in(viewer.get(html.unescape(href)).content.decode())
        assert len(listed) == int(count), (series, href, listed)
    by_series = {series: jobs_in(viewer.get(html.unescape(href)).content.decode()) for href, _, series in bars}
    assert by_series["none"] == ["2"]  # a diagnosis without a domain
    assert by_series["not analysed"] == ["3"]
    assert by_series["hardware"] == by_series["attributed"] == ["1"]


def test_the_overview_links_keep_its_window(viewer, three):
    page = viewer.get("/", {"days": "7"}).content.decode()
    first = (timezone.now().date() - timedelta(days=6)).isoformat()
    window = f"ended_after={first}T00%3A00"
    cause = re.search(r'href="(/jobs/\?domain=hardware&amp;subdomain=gpu.bus[^"]*)"', page).group(1)
    node = re.search(r'href="(/jobs/\?root_cause_node=node02[^"]*)"', page).group(1)
    everything = re.search(r'href="(/jobs/\?ended_after=[^"]*)">List them', page).group(1)
    for link in (cause, node, everything):
        assert window in link
    assert jobs_in(viewer.get(html.unescape(cause)).content.decode()) == ["1"]  # not job 4, 20 days ago
    assert jobs_in(viewer.get(html.unescape(node)).content.decode()) == ["1"]
    assert sorted(jobs_in(viewer.get(html.unescape(everything)).content.decode())) == ["1", "2", "3"]


def test_none_is_a_value_of_the_job_list_filters(viewer, three):
    assert jobs_in(viewer.get("/jobs/", {"domain": "none"}).content.decode()) == ["2"]
    assert jobs_in(viewer.get("/jobs/", {"outcome": "none"}).content.decode()) == ["3"]
    page = viewer.get("/jobs/").content.decode()
    assert '<option value="none">none (no domain)</option>' in page
    assert '<option value="none">none (not analysed)</option>' in page
