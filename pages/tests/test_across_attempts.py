"""Across attempts: the attempts of one job (requeues, restarts) linked both ways on their pages with each one's
verdict, and the job's page with the sequence."""

from datetime import timedelta

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from access.roles import VIEWER
from diagnoses.models import Attempt

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


def _with_versions(bundle, *, nccl: str, step: int):
    """The bundle with the lines that name its software (NCCL's banner on rank 0, the driver in node01's syslog) and
    rank 0's last Megatron-LM iteration line."""
    train = bundle / "logs" / "train.log"
    banner = f"[rank0]: node01:4711:4711 [0] NCCL INFO NCCL version {nccl}+cuda12.4\n"
    iteration = f"[rank0]:  iteration {step:>8}/    5000 | consumed samples: {step * 512:>12} | lm loss: 2.0E+00 |\n"
    train.write_text(banner + train.read_text() + iteration)
    syslog = bundle / "logs" / "node01" / "syslog.log"
    driver = "Nov  2 09:00:00 node01 kernel: NVRM: loaded NVIDIA UNIX x86_64 Kernel Module  570.124.06\n"
    syslog.write_text(driver + syslog.read_text())
    return bundle


@pytest.fixture
def upgraded(make_bundle, store):
    """Job 600 ran for a while and succeeded with NCCL 2.21.5; its requeue failed with NCCL 2.23.4, on node05 in
    node04's place, its GPU off the bus on node02; same driver, CUDA, image and NCCL_IB_HCA."""
    same = {"image": "nvcr.io/nvidia/pytorch:25.01-py3", "environment": {"NCCL_IB_HCA": "mlx5_0"}}
    good = store(
        _with_versions(
            make_bundle(job_id="600", state="COMPLETED", exit_code="0:0", faulty=None, **same),
            nccl="2.21.5",
            step=5000,
        )
    )
    failed = store(
        _with_versions(
            make_bundle(job_id="600", attempt=1, nodes=("node01", "node02", "node03", "node05"),
                        start=make_bundle.start + timedelta(days=1), **same),
            nccl="2.23.4", step=1200,
        )
    )  # fmt: skip
    return good, failed


def test_what_changed_shows_the_nccl_upgrade_first(viewer, upgraded):
    good, failed = upgraded
    html = viewer.get(reverse("pages:attempt-detail", args=[failed.pk])).content.decode()
    assert reverse("pages:attempt-changes", args=[failed.pk]) in html
    changes = viewer.get(reverse("pages:attempt-changes", args=[failed.pk])).content.decode()
    assert reverse("pages:attempt-detail", args=[good.pk]) in changes
    software = changes[changes.index('id="changes-software"') : changes.index('id="changes-nodes"')]
    rows = list(software.split("<tr")[2:])
    assert 'class="changed"' in rows[0]
    assert ">NCCL<" in rows[0]
    assert "2.21.5" in rows[0]
    assert "2.23.4" in rows[0]
    assert all('class="changed"' not in row for row in rows[1:])
    names = [row.split('class="mono">')[1].split("<")[0] for row in rows]
    assert names == ["NCCL", "driver", "CUDA", "image", "NCCL_IB_HCA"]
    nodes = changes[changes.index('id="changes-nodes"') : changes.index('id="changes-progress"')]
    assert "Added: <a" in nodes
    assert "node05</a>" in nodes
    assert "Removed: node04" in nodes
    progress = changes[changes.index('id="changes-progress"') : changes.index('id="changes-templates"')]
    reached = progress[progress.index("Step reached") : progress.index("First error")]
    assert reached.index("5000 of 5000") < reached.index("1200 of 5000")  # the good one's column first
    assert "240 s after its start" in progress  # the Xid four minutes in
    templates = changes[changes.index('id="changes-templates"') :]
    assert "fallen off the bus" in templates
    assert "Watchdog caught" not in templates  # the good attempt printed it too


def test_the_api_returns_the_same_comparison(api_client_for, upgraded):
    good, failed = upgraded
    client = api_client_for(VIEWER)
    body = client.get(f"/api/v1/attempts/{failed.pk}/changes").json()
    assert body["good"]["id"] == good.pk
    assert body["good"]["matched_by"] == "job"
    assert body["software"][0] == {"name": "NCCL", "good": "2.21.5", "now": "2.23.4", "changed": True}
    assert body["nodes"] == {"added": ["node05"], "removed": ["node04"], "kept": 3}
    assert body["first_error"]["now"] == 240.0  # the Xid four minutes in
    assert {when: (one["step"], one["of"]) for when, one in body["step"].items()} == {
        "now": (1200, 5000), "good": (5000, 5000)
    }  # fmt: skip
    assert body["step"]["now"]["ref"].startswith("logs/train.log:")
    assert any("fallen off the bus" in template["text"] for template in body["new_templates"])
    # the good attempt has none before it
    missing = client.get(f"/api/v1/attempts/{good.pk}/changes")
    assert missing.status_code == 404
    assert APIClient().get(f"/api/v1/attempts/{failed.pk}/changes").status_code == 401  # anonymous


def test_the_last_good_attempt_of_the_same_name_and_user(viewer, make_bundle, store):
    good = store(make_bundle(job_id="700", state="COMPLETED", faulty=None))
    failed = store(make_bundle(job_id="701", start=make_bundle.start + timedelta(hours=3)))
    other = store(make_bundle(job_id="702", user="bob", start=make_bundle.start + timedelta(hours=3)))
    html = viewer.get(reverse("pages:attempt-detail", args=[failed.pk])).content.decode()
    assert "(its name and user) worked before" in html
    assert reverse("pages:attempt-detail", args=[good.pk]) in html
    html = viewer.get(reverse("pages:attempt-detail", args=[other.pk])).content.decode()
    assert 'id="last-good"' not in html
    changes = viewer.get(reverse("pages:attempt-changes", args=[other.pk])).content.decode()
    assert "nothing to compare with" in changes


def test_history_in_the_evidence_links_the_earlier_attempt(
    viewer, tmp_path, make_bundle, store, folder_cluster, polled
):
    earlier = store(make_bundle(job_id="800", attempt=0))  # Xid 79 on node02
    cluster = folder_cluster(tmp_path / "drop")
    make_bundle(
        root=tmp_path / "drop", job_id="800", attempt=1, faulty=None, start=make_bundle.start + timedelta(days=1)
    )
    polled(cluster)
    requeue = Attempt.objects.get(job__job_id="800", number=1)
    html = viewer.get(reverse("pages:attempt-detail", args=[requeue.pk])).content.decode()
    trail = html[html.index('class="evidence"') :]
    item = trail[trail.index("history.hardware_before") :]
    item = item[: item.index("</li>")]
    assert "history/nodes.json#0" in item
    assert f'href="{reverse("pages:attempt-detail", args=[earlier.pk])}">the earlier attempt, job 800 #0</a>' in item


def test_a_repeat_offender_is_flagged_on_every_attempt_that_includes_it(viewer, make_bundle, store):
    from datetime import UTC, datetime

    recent = datetime.now(UTC).replace(microsecond=0) - timedelta(days=2)
    for job in ("900", "901", "902"):
        store(make_bundle(job_id=job, faulty="node02", start=recent))
    elsewhere = store(make_bundle(job_id="903", faulty=None, start=recent + timedelta(hours=3)))  # node02 ran it
    others = store(make_bundle(job_id="904", nodes=("node05", "node06"), faulty="node05", start=recent))
    assert elsewhere.verdict_outcome == "unattributed"
    html = viewer.get(reverse("pages:attempt-detail", args=[elsewhere.pk])).content.decode()
    flag = html[html.index('id="offenders"') :]
    flag = flag[: flag.index("</p>")]
    assert "node02</a>" in flag
    assert "root cause of 3 attempts in 30 days" in flag
    assert "node01" not in flag
    html = viewer.get(reverse("pages:attempt-detail", args=[others.pk])).content.decode()
    assert 'id="offenders"' not in html


def test_the_comparison_key_is_configurable(viewer, make_bundle, store, settings):
    good = store(make_bundle(job_id="700", state="COMPLETED", faulty=None))
    failed = store(make_bundle(job_id="701", start=make_bundle.start + timedelta(hours=3)))
    other = store(make_bundle(job_id="702", user="bob", start=make_bundle.start + timedelta(hours=3)))
    settings.FAULTLINE_COMPARE_BY = ["job"]  # requeues only
    changes = viewer.get(reverse("pages:attempt-changes", args=[failed.pk])).content.decode()
    assert "nothing to compare with" in changes
    settings.FAULTLINE_COMPARE_BY = ["job", "name"]  # the same job name whoever ran it
    changes = viewer.get(reverse("pages:attempt-changes", args=[other.pk])).content.decode()
    assert reverse("pages:attempt-detail", args=[good.pk]) in changes
    assert "the last good attempt of the same job name." in changes
    html = viewer.get(reverse("pages:attempt-detail", args=[other.pk])).content.decode()
    assert "This job (its name) worked before" in html


def test_repeat_offences_are_counted_from_the_moment_the_window_opens(make_bundle, store):
    """The window's first day is partly inside it: the attempts that ended on it before the window opened do not
    count, though the daily rollup holds them (``pages.selectors.repeat_offenders``)."""
    from pages import selectors

    opens = make_bundle.start.replace(hour=12)  # the attempts end 30 minutes after they start
    for job, ended in (("910", opens - timedelta(hours=1)), ("911", opens + timedelta(hours=1)),
                       ("912", opens + timedelta(days=2))):  # fmt: skip
        store(make_bundle(job_id=job, faulty="node02", start=ended - timedelta(minutes=30)))
    store(make_bundle(job_id="913", faulty="node03", start=opens + timedelta(days=1)))
    now = store(make_bundle(job_id="914", faulty=None, start=opens + timedelta(days=3)))
    assert selectors.repeat_offenders(now, since=opens) == {"node02": 2, "node03": 1}
    assert selectors.repeat_offenders(now, since=opens, named=True) == {}  # its verdict names none
    assert selectors.repeat_offenders(now, since=opens - timedelta(hours=2)) == {"node02": 3, "node03": 1}
