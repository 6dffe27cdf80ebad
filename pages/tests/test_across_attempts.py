"""Across attempts: the attempts of one job (requeues, restarts) linked both ways on their pages with each one's
verdict, and the job's page with the sequence."""

from datetime import timedelta

import pytest
from django.urls import reverse

from access.roles import VIEWER

pytestmark = pytest.mark.django_db


@pytest.fixture
def viewer(client_for):
    return client_for(VIEWER)


@pytest.fixture
def requeued(make_bundle, store):
    """Job 500 failed on node02's GPU, was requeued and failed again with nothing found (no fault), then once more
    on node03; job 501 ran once."""
    later = make_bundle.start + timedelta(hours=2)
    first = store(make_bundle(job_id="500", attempt=0))
    second = store(make_bundle(job_id="500", attempt=1, faulty=None, start=later))
    third = store(make_bundle(job_id="500", attempt=2, faulty="node03", start=later + timedelta(hours=2)))
    alone = store(make_bundle(job_id="501"))
    return first, second, third, alone


def test_each_attempt_links_the_others_of_its_job_with_their_verdicts(viewer, requeued):
    first, second, third, _ = requeued
    html = viewer.get(reverse("pages:attempt-detail", args=[second.pk])).content.decode()
    section = html[html.index('id="job-attempts"') :]
    section = section[: section.index("</section>")]
    assert "The scheduler ran this job 3 times" in section
    assert f'href="{reverse("pages:attempt-detail", args=[first.pk])}">#0</a>' in section
    assert f'href="{reverse("pages:attempt-detail", args=[third.pk])}">#2</a>' in section
    assert "#1 (this one)" in section
    assert f'href="{reverse("pages:attempt-detail", args=[second.pk])}"' not in section
    rows = section.split("<tr")[2:]  # after the header
    assert [row[row.index('class="badge ') + 13 :].split('"')[0] for row in rows] == [
        "attributed", "unattributed", "attributed"
    ]  # fmt: skip
    assert "node02" in rows[0]
    assert "node03" in rows[2]
    # and back: the first links the second
    html = viewer.get(reverse("pages:attempt-detail", args=[first.pk])).content.decode()
    assert f'href="{reverse("pages:attempt-detail", args=[second.pk])}">#1</a>' in html


def test_a_job_run_once_shows_no_sequence(viewer, requeued):
    alone = requeued[3]
    html = viewer.get(reverse("pages:attempt-detail", args=[alone.pk])).content.decode()
    assert 'id="job-attempts"' not in html
    assert reverse("pages:job-detail", args=["dgx-a", "501"]) in html  # the job's page is linked still


def test_the_job_page_shows_the_attempts_in_order(viewer, requeued, django_assert_max_num_queries):
    first, second, third, _ = requeued
    url = reverse("pages:job-detail", args=["dgx-a", "500"])
    with django_assert_max_num_queries(12):
        html = viewer.get(url).content.decode()
    links = [html.index(reverse("pages:attempt-detail", args=[a.pk]) + '"') for a in (first, second, third)]
    assert links == sorted(links)
    assert "3 attempts" in html
    assert viewer.get(reverse("pages:job-detail", args=["dgx-a", "999"])).status_code == 404
    assert viewer.get(reverse("pages:job-detail", args=["dgx-b", "500"])).status_code == 404


def test_the_job_page_needs_a_login(client, requeued):
    response = client.get(reverse("pages:job-detail", args=["dgx-a", "500"]))
    assert response.status_code == 302
    assert "login" in response["Location"]
