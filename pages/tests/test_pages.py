"""The triage pages, server-side: logins and roles, filters in the URL, htmx partials, the timeline,
escaping, reviews, downloads and query counts. The browser tests are in test_browser.py."""

import io
import json
import re
import tarfile
from datetime import timedelta

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from access.roles import ADMIN, TRIAGER, VIEWER
from diagnoses.filters import AttemptFilter
from diagnoses.models import Attempt, Review
from diagnoses.services import analysis, discovery, reviews, verdict_days
from pages import selectors
from pages.views import lists

pytestmark = pytest.mark.django_db
SCRIPT = "<script>alert('log')</script>"


@pytest.fixture
def viewer(client_for):
    return client_for(VIEWER)


@pytest.fixture
def triager(client_for):
    return client_for(TRIAGER)


@pytest.fixture
def attempts(make_bundle, store, replace_in):
    """Job 1: Xid 79 on node02 (its log line holds a script tag); job 2: unattributed (no fault);
    job 3: on dgx-b, a day later, Xid 79 on b01."""
    first = make_bundle(job_id="1", user="alice")
    replace_in(first, "logs/node02/syslog.log", "name=<unknown>", f"name={SCRIPT}")
    return {
        "1": store(first),
        "2": store(make_bundle(job_id="2", user="bob", faulty=None)),
        "3": store(
            make_bundle(
                cluster="dgx-b", job_id="3", nodes=("b01", "b02"), faulty="b01", start=make_bundle.start.replace(day=3)
            )
        ),
    }


def page_urls(attempt: Attempt) -> list[str]:
    evidence = attempt.current_diagnosis.evidence.first()
    return [
        reverse("pages:overview"),
        reverse("pages:job-list"),
        reverse("pages:attempt-detail", args=[attempt.pk]),
        reverse("pages:attempt-diagnosis-json", args=[attempt.pk]),
        reverse("pages:attempt-bundle", args=[attempt.pk]),
        reverse("pages:evidence-context", args=[attempt.pk, evidence.pk]),
        reverse("pages:triage-queue"),
        reverse("pages:node-detail", args=["dgx-a", "node02"]),
    ]


def jobs_in(html: str) -> list[str]:
    """The job ids of the attempt rows, in order."""
    return re.findall(r'<a href="/attempts/\d+/">(\w+)</a>', html)


def test_every_page_requires_a_login(client, attempts):
    for url in page_urls(attempts["1"]):
        response = client.get(url)
        assert response.status_code == 302, url
        assert response["Location"].startswith(reverse("login")), url


def test_every_page_answers_a_signed_in_viewer(viewer, attempts):
    for url in page_urls(attempts["1"]):
        assert viewer.get(url).status_code == 200, url


def test_the_navigation_links_the_pages_and_marks_the_current_one(viewer):
    html = viewer.get(reverse("pages:triage-queue")).content.decode()

    nav = html[html.index('<nav aria-label="Main">') : html.index("</nav>")]
    assert re.findall(r'<a href="([^"]+)"', nav) == ["/", "/jobs/", "/triage/", "/nodes/", "/patterns/", "/rules/",
                                                   "/clusters/",
                                                   "/drains/", "/notifications/", "/api/docs/"]  # fmt: skip
    assert '<a href="/triage/" aria-current="page">Triage queue</a>' in nav


def test_the_overview_counts_failures_causes_nodes_backlog_and_reviews(viewer, attempts, person):
    now = timezone.now()
    Attempt.objects.filter(pk=attempts["1"].pk).update(end=now - timedelta(days=2))
    Attempt.objects.filter(pk=attempts["2"].pk).update(end=now - timedelta(days=20))
    Attempt.objects.filter(pk=attempts["3"].pk).update(end=now - timedelta(days=60))
    verdict_days.verdict_days_rebuild()  # the ends moved by hand, not by a service: the overview's rollup built again
    reviews.review_create(diagnosis=attempts["1"].current_diagnosis, reviewer=person(TRIAGER), verdict="confirmed")

    month = viewer.get(reverse("pages:overview")).content.decode()
    week = viewer.get(reverse("pages:overview"), {"days": "7"}).content.decode()

    assert "Failed attempts per day by outcome: 2 attempts in 30 days, 1 attributed, 1 unattributed" in month
    assert "Failed attempts per day by domain: 2 attempts in 30 days, 1 hardware, 1 none" in month
    assert "Failed attempts per day by outcome: 1 attempt in 7 days, 1 attributed" in week
    assert 'hardware / gpu.bus</a></td><td class="num">1</td>' in month
    at_fault = month[month.index('id="nodes"') :]  # the nodes most often at fault (the latest failures list all)
    assert 'href="/nodes/dgx-a/node02/">node02</a>' in at_fault
    assert 'href="/nodes/dgx-b/b01/"' not in at_fault  # its attempt ended 60 days ago
    assert re.search(r'<p class="big"><a href="/triage/">1</a></p>', month)  # job 2, not reviewed
    assert "100%" in month
    assert "of 1 review in this window agreed with the engine:\n      1 confirmed its diagnosis, 0 picked one" in month


@pytest.mark.parametrize(
    ("query", "jobs"),
    [
        ({}, ["3", "2", "1"]),
        ({"cluster": "dgx-a"}, ["2", "1"]),
        ({"outcome": "unattributed"}, ["2"]),
        ({"domain": "hardware", "subdomain": "gpu.bus"}, ["3", "1"]),
        ({"node": "b02"}, ["3"]),
        ({"user": "bob"}, ["2"]),
        ({"ended_after": "2026-11-03T00:00"}, ["3"]),
        ({"ended_before": "2026-11-03T00:00"}, ["2", "1"]),
        ({"q": "PRETRAIN"}, ["3", "2", "1"]),
        ({"q": "3"}, ["3"]),
        ({"q": "nothing like it"}, []),
        ({"sort": "user"}, ["1", "2", "3"]),
        ({"sort": "-user"}, ["3", "2", "1"]),
    ],
)
def test_the_job_list_filters_and_sorts(viewer, attempts, query, jobs):
    Attempt.objects.filter(pk=attempts["3"].pk).update(user="carol")

    response = viewer.get(reverse("pages:job-list"), query)

    assert response.status_code == 200
    assert jobs_in(response.content.decode()) == jobs


def test_an_htmx_filter_request_gets_the_table_alone_and_the_canonical_url(viewer, attempts):
    query = {"cluster": "dgx-a", "outcome": "", "q": "", "sort": "-end"}
    htmx = {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "attempt-table"}

    partial = viewer.get(reverse("pages:job-list"), query, **htmx)
    page = viewer.get(reverse("pages:job-list"), query)

    assert partial.content.decode().lstrip().startswith('<div id="attempt-table"')
    assert "<html" not in partial.content.decode()
    assert partial["HX-Push-Url"] == "/jobs/?cluster=dgx-a&sort=-end"
    assert jobs_in(partial.content.decode()) == jobs_in(page.content.decode()) == ["2", "1"]
    assert "<html" in page.content.decode()
    assert 'id="filters"' in page.content.decode()
    assert "HX-Request" in partial["Vary"]
    assert "HX-Request" in page["Vary"]


def test_a_history_restore_gets_the_whole_page(viewer, attempts):
    response = viewer.get(
        reverse("pages:job-list"),
        {"cluster": "dgx-a"},
        HTTP_HX_REQUEST="true",
        HTTP_HX_HISTORY_RESTORE_REQUEST="true",
    )

    assert "<html" in response.content.decode()
    assert "<option selected>dgx-a</option>" in response.content.decode()


def test_an_invalid_filter_says_which_and_lists_nothing(viewer, attempts):
    html = viewer.get(reverse("pages:job-list"), {"outcome": "broken", "ended_after": "yesterday"}).content.decode()

    assert "outcome: Select a valid choice." in html
    assert "ended_after: Enter a valid date/time." in html
    assert jobs_in(html) == []


def test_the_job_list_pages_by_position(viewer, attempts, monkeypatch):
    monkeypatch.setattr(lists, "PAGE_SIZE", 2)

    first = viewer.get(reverse("pages:job-list")).content.decode()
    after = re.search(r'href="\?after=([\w-]+)" rel="next"', first).group(1)
    second = viewer.get(reverse("pages:job-list"), {"after": after}).content.decode()
    before = re.search(r'href="\?before=([\w-]+)" rel="prev"', second).group(1)
    back = viewer.get(reverse("pages:job-list"), {"before": before}).content.decode()

    assert (jobs_in(first), jobs_in(second), jobs_in(back)) == (["3", "2"], ["1"], ["3", "2"])
    assert "3 attempts" in first
    assert 'rel="next"' not in second
    assert 'rel="prev"' not in back


@pytest.mark.parametrize("url", [reverse("pages:job-list"), reverse("pages:triage-queue"), "/nodes/dgx-a/node01/"])
def test_list_queries_do_not_grow_with_the_rows(viewer, make_bundle, url, django_assert_num_queries, store):
    store(make_bundle(job_id="10", faulty=None))
    with CaptureQueriesContext(connection) as one_row:
        assert len(jobs_in(viewer.get(url).content.decode())) == 1
    for job in range(11, 16):
        store(make_bundle(job_id=str(job), faulty=None if job % 2 else "node01"))

    with django_assert_num_queries(len(one_row.captured_queries)):
        html = viewer.get(url).content.decode()

    assert len(jobs_in(html)) == (4 if url == reverse("pages:triage-queue") else 6)
    assert len(one_row.captured_queries) <= 13  # the node page's drain panel: its drains and the person's permissions


def test_the_attempt_page_summarises_the_diagnosis(viewer, attempts):
    attempt = attempts["1"]
    html = viewer.get(reverse("pages:attempt-detail", args=[attempt.pk])).content.decode()

    assert '<span class="badge attributed">attributed</span>' in html
    assert "hardware / gpu.bus" in html
    assert "GPU fell off the bus on node02" in html
    assert "<code>NODE_REBOOT</code>" in html
    assert "default revision 1" in html
    assert '<g class="lane is-root-cause">' in html
    assert html.count('class="mark role-root_cause"') >= 1
    assert html.count('<g class="lane') == 4  # one lane per node
    assert f'href="/attempts/{attempt.pk}/diagnosis.json"' in html
    assert f'href="/attempts/{attempt.pk}/bundle.tar.gz"' in html


def test_a_candidate_named_only_by_a_hedged_line_is_shown_as_a_hint_not_a_verdict(viewer, make_bundle, store):
    """PyTorch's DataLoader guesses at shared memory; uncorroborated, the attempt stays unattributed and the page
    says so, with the candidate marked as a hint (docs/diagnosis.md, "nominated")."""
    bundle = make_bundle(job_id="4", faulty=None)
    with (bundle / "logs" / "train.log").open("a") as log:
        log.write(
            "[rank1]: RuntimeError: DataLoader worker (pid 4242) is killed by signal: Bus error. It is possible "
            "that dataloader's workers are out of shared memory. Please try to raise your shared memory limit.\n"
        )
    attempt = store(bundle)
    html = viewer.get(reverse("pages:attempt-detail", args=[attempt.pk])).content.decode()

    assert attempt.current_diagnosis.outcome == "unattributed"
    assert "not attributed: 1 candidate named without the evidence to settle it" in html
    assert "ambiguous between" not in html
    assert '<span class="badge">hint</span>' in html
    assert "named by a hedged line, not corroborated" in html


def test_log_text_is_escaped_everywhere(viewer, attempts):
    attempt = attempts["1"]
    evidence = attempt.current_diagnosis.evidence.get(role="root_cause", node__name="node02")
    assert SCRIPT in evidence.text

    pages = [
        viewer.get(reverse("pages:attempt-detail", args=[attempt.pk])),
        viewer.get(reverse("pages:evidence-context", args=[attempt.pk, evidence.pk])),
        viewer.get(reverse("pages:node-detail", args=["dgx-a", "node02"])),
    ]

    for response in pages:
        html = response.content.decode()
        assert "<script>alert" not in html
        assert "&lt;script&gt;alert(&#x27;log&#x27;)&lt;/script&gt;" in html


def test_the_context_of_a_line_is_twenty_lines_either_side(viewer, make_bundle, store):
    bundle = make_bundle(job_id="7")
    log = bundle / "logs" / "node02" / "syslog.log"
    lines = log.read_text().splitlines()
    filler = [f"Nov  2 10:0{i // 20}:{i % 20:02d} node02 systemd[1]: filler {i}" for i in range(60)]
    log.write_text("\n".join(lines[:2] + filler[:30] + lines[2:] + filler[30:]) + "\n")
    attempt = store(bundle)
    evidence = attempt.current_diagnosis.evidence.get(role="root_cause", node__name="node02")
    assert evidence.ref == "logs/node02/syslog.log:33"

    html = viewer.get(reverse("pages:evidence-context", args=[attempt.pk, evidence.pk])).content.decode()

    assert '<ol class="context-lines" start="13">' in html
    assert html.count("<li") == 41
    assert re.search(r'<li class="hit" aria-current="true"><code>[^<]*Xid', html)


def test_evidence_of_another_attempt_is_not_shown(viewer, attempts):
    other = attempts["3"].current_diagnosis.evidence.first()

    response = viewer.get(reverse("pages:evidence-context", args=[attempts["1"].pk, other.pk]))

    assert response.status_code == 404


def test_missing_sources_are_called_out(viewer, make_bundle, store):
    bundle = make_bundle(job_id="8")
    (bundle / "metrics").mkdir()
    (bundle / "metrics" / "dcgm.json").write_text("{not json")
    attempt = store(bundle)

    html = viewer.get(reverse("pages:attempt-detail", args=[attempt.pk])).content.decode()

    assert '<p class="warning" role="note"><strong>Missing:</strong>' in html


def test_the_diagnosis_json_is_the_stored_document(viewer, attempts):
    diagnosis = attempts["1"].current_diagnosis

    response = viewer.get(reverse("pages:attempt-diagnosis-json", args=[attempts["1"].pk]))

    assert response["Content-Type"] == "application/json"
    assert response.content.decode() == diagnosis.document_json


def test_the_bundle_downloads_as_a_streamed_tar_gz(viewer, attempts, bundle_root):
    attempt = attempts["1"]

    response = viewer.get(reverse("pages:attempt-bundle", args=[attempt.pk]))

    assert response.streaming
    assert response["Content-Disposition"] == 'attachment; filename="dgx-a-1-0.tar.gz"'
    stored = bundle_root / attempt.bundle
    files = sorted(p.relative_to(stored).as_posix() for p in stored.rglob("*") if p.is_file())
    with tarfile.open(fileobj=io.BytesIO(b"".join(response.streaming_content)), mode="r:gz") as archive:
        assert sorted(name.removeprefix("dgx-a-1-0/") for name in archive.getnames()) == files
        for name in files:
            assert archive.extractfile(f"dgx-a-1-0/{name}").read() == (stored / name).read_bytes()


def test_a_viewer_sees_no_review_form_and_may_not_post_one(viewer, attempts):
    attempt = attempts["2"]

    html = viewer.get(reverse("pages:attempt-detail", args=[attempt.pk])).content.decode()
    response = viewer.post(reverse("pages:attempt-review", args=[attempt.pk]), {"verdict": "confirmed"})

    assert "review-form" not in html
    assert response.status_code == 403
    assert not Review.objects.exists()


@pytest.mark.parametrize("role", [TRIAGER, ADMIN])
def test_a_triager_confirms_and_the_attempt_leaves_the_queue(attempts, role, client_for):
    client = client_for(role, "rita")
    attempt = attempts["2"]
    assert jobs_in(client.get(reverse("pages:triage-queue")).content.decode()) == ["2"]
    assert "review-form" in client.get(reverse("pages:attempt-detail", args=[attempt.pk])).content.decode()

    response = client.post(reverse("pages:attempt-review", args=[attempt.pk]), {"verdict": "confirmed", "note": "ok"})

    assert response.status_code == 302
    review = Review.objects.get()
    assert (review.diagnosis, review.reviewer.username, review.verdict, review.note) == (
        attempt.current_diagnosis,
        "rita",
        "confirmed",
        "ok",
    )
    assert jobs_in(client.get(reverse("pages:triage-queue")).content.decode()) == []
    reviewed = client.get(reverse("pages:triage-queue"), {"tab": "reviewed"}).content.decode()
    assert jobs_in(reviewed.replace("/#reviews", "/")) == ["2"]
    page = client.get(reverse("pages:attempt-detail", args=[attempt.pk])).content.decode()
    assert "<strong>Confirmed</strong> by rita" in page


def test_a_correction_by_htmx_reloads_the_page_which_leads_with_the_new_verdict(triager, attempts):
    attempt = attempts["2"]
    body = {
        "verdict": "corrected",
        "corrected_outcome": "attributed",
        "corrected_domain": "hardware",
        "corrected_subdomain": "gpu.memory",
        "corrected_nodes": ["node03"],
    }

    htmx = {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "reviews"}  # as the form's hx-target makes htmx send
    response = triager.post(reverse("pages:attempt-review", args=[attempt.pk]), body, **htmx)

    assert response.status_code == 204
    assert response["HX-Refresh"] == "true"
    review = Review.objects.get()
    assert (review.corrected_outcome, review.corrected_domain, review.corrected_subdomain, review.corrected_nodes) == (
        "attributed",
        "hardware",
        "gpu.memory",
        ["node03"],
    )
    html = triager.get(reverse("pages:attempt-detail", args=[attempt.pk])).content.decode()
    verdict = html[html.index('<section id="verdict"') : html.index("</section>", html.index('<section id="verdict"'))]
    assert "hardware / gpu.memory" in verdict
    assert ">node03</a>" in verdict
    assert "Corrected by <strong>person-triager</strong>" in verdict
    assert "Review recorded." in html
    assert "the verdict of record" in html


def test_a_refused_review_by_htmx_answers_with_the_reviews_and_the_reason(triager, attempts):
    body = {"verdict": "corrected", "corrected_outcome": "attributed", "corrected_domain": "network",
            "corrected_subdomain": "gpu.memory"}  # fmt: skip
    htmx = {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "reviews"}

    response = triager.post(reverse("pages:attempt-review", args=[attempts["2"].pk]), body, **htmx)

    html = response.content.decode()
    assert html.lstrip().startswith('<section id="reviews"')
    assert "gpu.memory is not a subdomain of network." in html
    assert not Review.objects.exists()


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"verdict": "corrected"}, "A correction names the corrected outcome."),
        ({"verdict": "corrected", "corrected_outcome": "attributed"}, "An attributed outcome names its domain."),
        (
            {"verdict": "corrected", "corrected_outcome": "attributed", "corrected_domain": "network",
             "corrected_subdomain": "gpu.memory"},
            "gpu.memory is not a subdomain of network.",
        ),
        ({"verdict": "corrected", "corrected_outcome": "unattributed", "corrected_nodes": ["node01"]}, "no domain"),
        ({"verdict": "corrected", "corrected_outcome": "ambiguous", "corrected_nodes": ["elsewhere"]}, "elsewhere"),
        ({"verdict": "maybe"}, "Select a valid choice."),
    ],
)  # fmt: skip
def test_an_inconsistent_review_is_refused_with_the_reason(triager, attempts, body, message):
    response = triager.post(reverse("pages:attempt-review", args=[attempts["2"].pk]), body)

    assert response.status_code == 400
    assert message in response.content.decode()
    assert not Review.objects.exists()


def test_correction_fields_of_a_confirmation_are_dropped(triager, attempts):
    body = {"verdict": "insufficient_evidence", "corrected_outcome": "attributed", "corrected_nodes": ["node01"]}

    triager.post(reverse("pages:attempt-review", args=[attempts["2"].pk]), body)

    review = Review.objects.get()
    assert (review.verdict, review.corrected_outcome, review.corrected_nodes) == ("insufficient_evidence", "", [])


def test_a_post_without_the_csrf_token_is_refused(attempts, person):
    client = Client(enforce_csrf_checks=True)
    client.force_login(person(TRIAGER))

    response = client.post(reverse("pages:attempt-review", args=[attempts["2"].pk]), {"verdict": "confirmed"})

    assert response.status_code == 403
    assert not Review.objects.exists()


def test_the_node_page_shows_its_history_and_the_repeat_offender_badge(viewer, make_bundle, settings, store):
    settings.FAULTLINE_REPEAT_OFFENDER_COUNT = 2
    settings.FAULTLINE_REPEAT_OFFENDER_DAYS = 30
    recent = timezone.now() - timedelta(days=3)
    for job in ("21", "22"):
        store(make_bundle(job_id=job, faulty="node04", start=recent))
    url = reverse("pages:node-detail", args=["dgx-a", "node04"])

    html = viewer.get(url).content.decode()
    settings.FAULTLINE_REPEAT_OFFENDER_COUNT = 3
    below = viewer.get(url).content.decode()

    assert "repeat offender</span>" in html
    assert "repeat offender</span>" not in below
    assert "Root cause of <strong>2</strong> attempts that ended in the last 30 days" in html
    assert 'hardware / gpu.bus</a></td><td class="num">2</td>' in html
    assert html.count('<strong class="role-root_cause">root cause</strong>') == 2
    assert "<code>gpu.xid.fallen_off_bus</code>" in html
    assert viewer.get(reverse("pages:node-detail", args=["dgx-a", "nowhere"])).status_code == 404


def test_a_triager_gathers_again_an_attempt_whose_gathering_failed(
    tmp_path, make_bundle, folder_cluster, client_for, django_capture_on_commit_callbacks
):
    cluster = folder_cluster(tmp_path / "drop")
    make_bundle(root=tmp_path / "drop")
    discovery.cluster_poll(cluster_id=cluster.pk)  # the analysis it queues on commit never runs here
    attempt = Attempt.objects.get()
    analysis.attempt_fail(attempt=attempt, reason="gathering the context failed: the scheduler did not answer")
    url = reverse("pages:attempt-detail", args=[attempt.pk])
    gather = reverse("pages:attempt-gather", args=[attempt.pk])
    viewer, triager = client_for(VIEWER), client_for(TRIAGER)

    assert "Gather again" not in viewer.get(url).text
    assert viewer.post(gather).status_code == 403
    assert "Gather again" in triager.get(url).text
    with django_capture_on_commit_callbacks(execute=True):
        response = triager.post(gather)

    assert response["Location"] == url
    attempt.refresh_from_db()
    assert (attempt.analysis_state, attempt.current_diagnosis.subdomain) == ("analysed", "gpu.bus")
    assert "Gather again" not in triager.get(url).text


@pytest.mark.parametrize(
    ("params", "index"),
    [
        ({"outcome": "ambiguous"}, "attempt_verdict_outcome"),
        ({"domain": "network"}, "attempt_verdict_domain"),
        ({"subdomain": "gpu.bus"}, "attempt_verdict_subdomain"),
        ({"root_cause_node": "node02"}, "diagnoses_attempt_verdict_nodes_node_id"),
        (None, "attempt_needs_review"),  # the triage queue
    ],
)
def test_the_verdict_lists_read_the_attempt_row_through_an_index(attempts, params, index):
    """The lists filter on the verdict's columns, with an index for each (the benchmark measures them at a million
    attempts; here the planner is told to avoid sequential scans, so the plan shows an index serves the query)."""
    rows = selectors.triage_queue() if params is None else AttemptFilter(params, queryset=selectors.attempt_table()).qs
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")
    plan = rows.order_by("-end", "-pk")[:51].explain()

    assert index in plan
    assert "diagnoses_diagnosis" not in plan  # no join to the diagnoses, no subquery per row


def test_the_node_page_lists_its_own_causes_first_then_its_other_events_by_role(viewer, attempts):
    def sections(query: str = "") -> tuple[str, str]:
        html = viewer.get("/nodes/dgx-a/node02/" + query).content.decode()
        own = html[html.index('class="own-causes"') : html.index('id="node-events"')]
        return own, html[html.index('id="node-events"') : html.index("Attempts on this node")]

    own, other = sections()
    cascade_only = sections("?role=cascade")[1]
    root_causes = sections("?role=root_cause")[1]

    assert "job 1</a>" in own
    assert "<code>gpu.xid.fallen_off_bus</code>" in own
    assert "fallen_off_bus" not in other  # not twice
    assert set(re.findall(r'<span class="small">(\w+)</span>', cascade_only)) == {"cascade"}
    assert "No root_cause events." in root_causes
    assert '<option value="cascade" selected>' in cascade_only


def test_the_exports_write_the_filtered_attempts_with_their_verdicts(viewer, attempts, person):
    reviews.review_create(
        diagnosis=attempts["1"].current_diagnosis, reviewer=person(TRIAGER, "rita"), verdict="corrected",
        corrected_outcome="attributed", corrected_domain="hardware", corrected_subdomain="gpu.memory",
        corrected_nodes=["node03"],
    )  # fmt: skip
    Attempt.objects.filter(pk=attempts["2"].pk).update(name="=HYPERLINK(evil)")

    as_csv = viewer.get(reverse("pages:job-export", args=["csv"]), {"cluster": "dgx-a"})
    as_json = viewer.get(reverse("pages:job-export", args=["json"]), {"root_cause_node": "node03"})
    refused = viewer.get(reverse("pages:job-export", args=["csv"]), {"ended_after": "yesterday"})

    lines = b"".join(as_csv.streaming_content).decode().splitlines()
    assert as_csv["Content-Disposition"] == 'attachment; filename="attempts.csv"'
    assert lines[0].startswith(
        "attempt_id,url,cluster,job_id,attempt,name,user,state,end,verdict_source,outcome,domain,subdomain,"
    )
    assert len(lines) == 3  # the header and dgx-a's two attempts
    pk = attempts["2"].pk
    assert lines[1].startswith(f"{pk},http://testserver/attempts/{pk}/,dgx-a,2,")  # the newest first
    assert ",'=HYPERLINK(evil)," in lines[1]  # job 2 ended last; a formula stays text
    assert ",review,attributed,hardware,gpu.memory,node03,rita," in lines[2]
    assert lines[2].endswith(",attributed,hardware,gpu.bus,False")  # the engine's, beside
    rows = json.loads(b"".join(as_json.streaming_content))
    assert [(row["job_id"], row["subdomain"], row["root_cause_nodes"], row["engine_subdomain"]) for row in rows] == [
        ("1", "gpu.memory", ["node03"], "gpu.bus")
    ]
    assert (rows[0]["attempt_id"], rows[0]["url"]) == (
        attempts["1"].pk, f"http://testserver/attempts/{attempts['1'].pk}/"
    )  # fmt: skip
    assert refused.status_code == 400
