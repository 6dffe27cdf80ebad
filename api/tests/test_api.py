"""The REST API: authentication everywhere, roles, filters, pagination, uploads, the error format."""

import io

import pytest
from django.contrib.auth.models import User
from django.urls import resolve
from rest_framework.test import APIClient

from access.roles import TRIAGER, VIEWER
from api.tests.errors import error
from diagnoses.models import Attempt, Diagnosis, Review
from diagnoses.services import attempts

pytestmark = pytest.mark.django_db


@pytest.fixture
def viewer(api_client_for):
    return api_client_for(VIEWER)


@pytest.fixture
def triager(api_client_for):
    return api_client_for(TRIAGER)


@pytest.fixture
def stored(make_bundle, django_capture_on_commit_callbacks):
    """Three analysed attempts: two failed on dgx-a (one unattributed), one NODE_FAIL on dgx-b a day later."""
    with django_capture_on_commit_callbacks(execute=True):
        attempts.attempt_ingest_directory(path=make_bundle(job_id="1", user="alice"))
        attempts.attempt_ingest_directory(path=make_bundle(job_id="2", user="bob", faulty=None))
        attempts.attempt_ingest_directory(
            path=make_bundle(
                cluster="dgx-b",
                job_id="3",
                nodes=("b01", "b02"),
                faulty="b01",
                start=make_bundle.start.replace(day=3),
                state="NODE_FAIL",
            )
        )
    return {a.job.job_id: a for a in Attempt.objects.select_related("job")}


def api_paths() -> list[str]:
    from django.urls import get_resolver

    paths = []
    for pattern in get_resolver().url_patterns:
        if str(pattern.pattern) == "api/v1/":
            for child in pattern.url_patterns:
                route = str(child.pattern).lstrip("^").rstrip("$")
                if "<" not in route and "(?P" not in route:
                    paths.append("/api/v1/" + route.replace("\\.", "."))
    return paths


@pytest.mark.parametrize("method", ["get", "post"])
def test_every_endpoint_requires_authentication(method):
    paths = [*api_paths(), "/api/v1/attempts/1", "/api/v1/attempts/1/reanalyse", "/api/schema/", "/api/docs/"]
    assert "/api/v1/attempts" in paths
    assert "/api/v1/analyze" in paths
    for path in paths:
        response = getattr(APIClient(), method)(path)
        if response.status_code == 405:
            continue
        assert response.status_code in (401, 403), path
        if path.startswith("/api/v1/"):
            assert error(response)["code"] == "not_authenticated", path


def test_a_wrong_token_is_refused():
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION="Token nonsense")

    response = client.get("/api/v1/attempts")

    assert response.status_code == 401
    assert error(response) == {"code": "authentication_failed", "message": "Invalid token.", "field": None}


def test_session_authentication_works(client, stored):
    User.objects.create_user("carol", password="a long password")
    signed_in = client.post("/accounts/login/", {"username": "carol", "password": "a long password"})
    assert signed_in.status_code == 302

    assert client.get("/api/v1/attempts").json()["count"] == 3


def test_the_attempt_list_shows_the_current_diagnosis(viewer, stored):
    response = viewer.get("/api/v1/attempts", {"cluster": "dgx-b"})

    assert response.status_code == 200
    [item] = response.json()["results"]
    assert (item["cluster"], item["job_id"], item["number"], item["nodes"]) == ("dgx-b", "3", 0, ["b01", "b02"])
    assert item["url"] == f"http://testserver/api/v1/attempts/{stored['3'].pk}"
    diagnosis = item["current_diagnosis"]
    assert (diagnosis["outcome"], diagnosis["subdomain"], diagnosis["root_cause_nodes"]) == (
        "attributed",
        "gpu.bus",
        ["b01"],
    )


@pytest.mark.parametrize(
    ("query", "jobs"),
    [
        ({}, ["1", "2", "3"]),
        ({"cluster": "dgx-a"}, ["1", "2"]),
        ({"state": "node_fail"}, ["3"]),
        ({"analysis_state": "analysed"}, ["1", "2", "3"]),
        ({"outcome": "attributed"}, ["1", "3"]),
        ({"outcome": "unattributed"}, ["2"]),
        ({"domain": "hardware"}, ["1", "3"]),
        ({"subdomain": "gpu.bus", "cluster": "dgx-a"}, ["1"]),
        ({"node": "node03"}, ["1", "2"]),
        ({"node": "b02"}, ["3"]),
        ({"root_cause_node": "node02"}, ["1"]),
        ({"user": "bob"}, ["2"]),
        ({"job": "3"}, ["3"]),
        ({"ended_after": "2026-11-03T00:00:00Z"}, ["3"]),
        ({"ended_before": "2026-11-03T00:00:00Z"}, ["1", "2"]),
    ],
)
def test_attempt_filters(viewer, stored, query, jobs):
    response = viewer.get("/api/v1/attempts", query)

    assert response.status_code == 200
    assert sorted(item["job_id"] for item in response.json()["results"]) == jobs


def test_an_invalid_filter_value_is_a_400_naming_the_field(viewer, stored):
    response = viewer.get("/api/v1/attempts", {"outcome": "sideways"})

    assert response.status_code == 400
    problem = error(response)
    assert problem["field"] == "outcome"
    assert problem["code"] == "invalid_choice"
    assert "sideways" in problem["message"]


def test_lists_are_paginated(viewer, stored):
    first = viewer.get("/api/v1/attempts", {"page_size": 2}).json()
    second = viewer.get(first["next"]).json()

    assert first["count"] == 3
    assert len(first["results"]) == 2
    assert len(second["results"]) == 1
    assert second["next"] is None


def test_list_queries_do_not_grow_with_the_rows(viewer, stored, django_assert_max_num_queries):
    with django_assert_max_num_queries(8):
        assert len(viewer.get("/api/v1/attempts").json()["results"]) == 3
    with django_assert_max_num_queries(6):
        assert len(viewer.get("/api/v1/diagnoses").json()["results"]) == 3


def test_clusters_jobs_diagnoses_evidence_and_events(viewer, stored):
    attempt = stored["1"]
    diagnosis = attempt.diagnoses.get()

    assert [c["name"] for c in viewer.get("/api/v1/clusters").json()["results"]] == ["dgx-a", "dgx-b"]
    assert [j["job_id"] for j in viewer.get("/api/v1/jobs", {"user": "bob"}).json()["results"]] == ["2"]
    detail = viewer.get(f"/api/v1/diagnoses/{diagnosis.pk}").json()
    assert detail["document"] == diagnosis.document
    assert detail["revision"]["ruleset"] == "default"
    evidence = viewer.get("/api/v1/evidence", {"node": "node02", "rule": "gpu.xid.fallen_off_bus"}).json()["results"]
    assert [(e["diagnosis"], e["ref"]) for e in evidence] == [(diagnosis.pk, "logs/node02/syslog.log:3")]
    events = viewer.get("/api/v1/events", {"diagnosis": diagnosis.pk, "role": "cascade"}).json()
    assert events["count"] == 8


def test_the_lines_around_a_piece_of_evidence(viewer, stored):
    evidence = stored["1"].diagnoses.get().evidence.get(role="root_cause")

    lines = viewer.get(f"/api/v1/evidence/{evidence.pk}/excerpt", {"context": 1}).json()

    assert [line["line"] for line in lines] == [2, 3]
    assert "Xid (PCI:0000:3b:00): 79" in lines[1]["text"]


def test_an_unknown_object_is_a_404_in_the_error_format(viewer):
    response = viewer.get("/api/v1/attempts/999999")

    assert response.status_code == 404
    assert error(response)["code"] == "not_found"


def test_posting_a_bundle_as_the_body_returns_202_and_the_attempt_and_page_urls(
    triager, make_bundle, bundle_root, tar_gz
):
    response = triager.post("/api/v1/attempts", data=tar_gz(make_bundle(job_id="77")), content_type="application/gzip")

    assert response.status_code == 202
    attempt = Attempt.objects.get()
    url = f"http://testserver/api/v1/attempts/{attempt.pk}"
    page_url = f"http://testserver/attempts/{attempt.pk}/"
    assert response.json() == {"id": attempt.pk, "url": url, "page_url": page_url, "analysis_state": "queued"}
    assert response["Location"] == url
    assert triager.get(url).json()["job_id"] == "77"
    assert resolve(f"/attempts/{attempt.pk}/").view_name == "pages:attempt-detail"


def test_posting_a_bundle_as_a_multipart_field(triager, make_bundle, tar_gz):
    upload = io.BytesIO(tar_gz(make_bundle(job_id="78")))
    upload.name = "bundle.tar.gz"

    response = triager.post("/api/v1/attempts", {"bundle": upload}, format="multipart")

    assert response.status_code == 202
    assert Attempt.objects.get().job.job_id == "78"


def test_a_duplicate_upload_is_a_409(triager, make_bundle, tar_gz):
    body = tar_gz(make_bundle(job_id="79"))
    triager.post("/api/v1/attempts", data=body, content_type="application/gzip")

    response = triager.post("/api/v1/attempts", data=body, content_type="application/gzip")

    assert response.status_code == 409
    assert error(response) == {
        "code": "duplicate",
        "message": "attempt 0 of job 79 on cluster dgx-a is already stored",
        "field": None,
    }
    assert Attempt.objects.count() == 1


@pytest.mark.parametrize(
    ("body", "content_type", "code", "message"),
    [
        (b"hello", "application/gzip", "invalid_bundle", "not a gzip-compressed archive"),
        (b"", "application/gzip", "invalid_bundle", "the upload is empty"),
        (b"{}", "application/json", "invalid_bundle", "unsupported content type 'application/json'"),
    ],
)
def test_a_bad_upload_is_a_400_naming_the_problem(
    triager, bundle_root, body, content_type, code, message, stored_bundles, staging_left
):
    response = triager.post("/api/v1/attempts", data=body, content_type=content_type)

    assert response.status_code == 400
    problem = error(response)
    assert (problem["code"], problem["field"]) == (code, "bundle")
    assert message in problem["message"]
    assert not Attempt.objects.exists()
    assert stored_bundles() == []
    assert staging_left() == []


def test_an_oversize_upload_is_refused_before_it_is_read(triager, make_bundle, settings, bundle_root, tar_gz):
    settings.FAULTLINE_UPLOAD_MAX_BYTES = 100

    response = triager.post("/api/v1/attempts", data=tar_gz(make_bundle()), content_type="application/gzip")

    assert response.status_code == 400
    assert error(response)["code"] == "too_large"
    assert error(response)["message"] == "the upload is larger than 100 bytes"
    assert not Attempt.objects.exists()


def test_a_viewer_may_not_upload_reanalyse_or_review(viewer, stored, make_bundle, tar_gz):
    attempt = stored["1"]
    responses = [
        viewer.post("/api/v1/attempts", data=tar_gz(make_bundle(job_id="9")), content_type="application/gzip"),
        viewer.post(f"/api/v1/attempts/{attempt.pk}/reanalyse"),
        viewer.post(
            "/api/v1/reviews", {"diagnosis": attempt.current_diagnosis_id, "verdict": "confirmed"}, format="json"
        ),
    ]

    assert [r.status_code for r in responses] == [403, 403, 403]
    assert all(error(r)["code"] == "permission_denied" for r in responses)
    assert Attempt.objects.count() == 3
    assert not Review.objects.exists()


def test_reanalyse_queues_the_attempt_again(triager, stored, django_capture_on_commit_callbacks):
    attempt = stored["2"]

    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        response = triager.post(f"/api/v1/attempts/{attempt.pk}/reanalyse")

    assert response.status_code == 202
    assert response.json()["url"].endswith(f"/api/v1/attempts/{attempt.pk}")
    assert len(callbacks) == 1
    assert Diagnosis.objects.filter(attempt=attempt).count() == 1


def test_a_triager_reviews_a_diagnosis(triager, stored):
    diagnosis = stored["2"].current_diagnosis
    body = {
        "diagnosis": diagnosis.pk,
        "verdict": "corrected",
        "corrected_outcome": "attributed",
        "corrected_domain": "storage",
        "corrected_subdomain": "filesystem",
        "corrected_nodes": ["node03", "node01"],
        "note": "Lustre went away; see the OSS logs.",
    }

    response = triager.post("/api/v1/reviews", body, format="json")

    assert response.status_code == 201
    review = Review.objects.get()
    assert (review.reviewer.username, review.corrected_nodes) == ("person-triager", ["node01", "node03"])
    assert response.json()["reviewer"] == "person-triager"
    listed = triager.get("/api/v1/reviews", {"diagnosis": diagnosis.pk}).json()["results"]
    assert [r["verdict"] for r in listed] == ["corrected"]


def test_the_attempt_resource_has_its_verdict_beside_its_diagnosis_and_a_review_can_be_withdrawn(triager, stored):
    attempt = stored["1"]
    body = {"diagnosis": attempt.current_diagnosis_id, "verdict": "corrected", "corrected_outcome": "attributed",
            "corrected_domain": "hardware", "corrected_subdomain": "gpu.memory",
            "corrected_nodes": ["node03"]}  # fmt: skip
    before = triager.get(f"/api/v1/attempts/{attempt.pk}").json()["verdict"]

    review = triager.post("/api/v1/reviews", body, format="json").json()
    after = triager.get(f"/api/v1/attempts/{attempt.pk}").json()
    listed = triager.get("/api/v1/attempts", {"root_cause_node": "node03", "verdict_source": "review"}).json()
    withdrawn = triager.post(f"/api/v1/reviews/{review['id']}/withdraw").json()
    again = triager.get(f"/api/v1/attempts/{attempt.pk}").json()["verdict"]

    assert (before["source"], before["subdomain"], before["root_cause_nodes"]) == ("engine", "gpu.bus", ["node02"])
    verdict = after["verdict"]
    assert (verdict["source"], verdict["outcome"], verdict["domain"], verdict["subdomain"]) == (
        "review", "attributed", "hardware", "gpu.memory",
    )  # fmt: skip
    assert (verdict["root_cause_nodes"], verdict["reviewed_by"], verdict["engine_disagrees"]) == (
        ["node03"], "person-triager", False,
    )  # fmt: skip
    assert verdict["review"].endswith(f"/api/v1/reviews/{review['id']}")
    assert after["current_diagnosis"]["subdomain"] == "gpu.bus"  # the engine's, beside
    assert [row["id"] for row in listed["results"]] == [attempt.pk]
    assert (withdrawn["withdrawn"] is not None, withdrawn["withdrawn_by"]) == (True, "person-triager")
    assert (again["source"], again["subdomain"]) == ("engine", "gpu.bus")
    assert triager.post(f"/api/v1/reviews/{review['id']}/withdraw").status_code == 400


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"verdict": "corrected"}, "corrected_outcome"),
        ({"verdict": "confirmed", "corrected_domain": "storage"}, "corrected_domain"),
        (
            {"verdict": "corrected", "corrected_outcome": "attributed", "corrected_domain": "weather"},
            "corrected_domain",
        ),
        ({"verdict": "maybe"}, "verdict"),
    ],
)
def test_an_inconsistent_review_is_a_400_naming_the_field(triager, stored, body, field):
    response = triager.post("/api/v1/reviews", {"diagnosis": stored["1"].current_diagnosis_id, **body}, format="json")

    assert response.status_code == 400
    assert error(response)["field"] == field
    assert not Review.objects.exists()


def test_analyze_returns_what_the_diagnose_command_prints_and_stores_nothing(
    viewer, make_bundle, bundle_root, diagnose_command, tar_gz, stored_bundles, staging_left
):
    bundle = make_bundle()
    printed = diagnose_command(str(bundle))

    response = viewer.post("/api/v1/analyze", data=tar_gz(bundle), content_type="application/gzip")

    assert response.status_code == 200
    assert response["Content-Type"] == "application/json"
    assert response.content.decode() == printed.stdout
    assert not Attempt.objects.exists()
    assert stored_bundles() == []
    assert staging_left() == []


def test_analyze_refuses_a_bad_bundle(viewer, bundle_root, staging_left):
    response = viewer.post("/api/v1/analyze", data=b"\x1f\x8bnot really", content_type="application/gzip")

    assert response.status_code == 400
    assert error(response)["field"] == "bundle"
    assert staging_left() == []


def test_the_schema_and_docs_are_served_to_signed_in_users(viewer):
    schema = viewer.get("/api/schema/", {"format": "json"})

    assert schema.status_code == 200
    document = schema.json()
    assert "/api/v1/attempts/{id}/reanalyse" in document["paths"]
    assert document["components"]["schemas"]["Error"]["required"] == ["error"]
    docs = viewer.get("/api/docs/")
    assert docs.status_code == 200
    assert b"/static/drf_spectacular_sidecar/swagger-ui-dist/" in docs.content  # served locally, no CDN


def test_analyze_answers_422_when_the_analysis_passes_its_time_limit(
    viewer, make_bundle, settings, tar_gz, stored_bundles, staging_left
):
    settings.FAULTLINE_ANALYZE_TIME_LIMIT = 0

    response = viewer.post("/api/v1/analyze", data=tar_gz(make_bundle()), content_type="application/gzip")

    assert response.status_code == 422
    assert error(response)["code"] == "too_slow"
    assert "FAULTLINE_ANALYZE_TIME_LIMIT" in error(response)["message"]
    assert stored_bundles() == []
    assert staging_left() == []


@pytest.mark.parametrize("endpoint", ["/api/v1/attempts", "/api/v1/analyze"])
def test_a_huge_tasks_per_node_is_refused_without_expanding_the_ranks(
    triager, make_bundle, tar_gz, endpoint, stored_bundles, staging_left
):
    import json

    bundle = make_bundle()
    record = json.loads((bundle / "attempt.json").read_text())
    (bundle / "attempt.json").write_text(json.dumps({**record, "tasks_per_node": 100_000_000}))

    response = triager.post(endpoint, data=tar_gz(bundle), content_type="application/gzip")

    assert response.status_code == 400
    assert "field 'tasks_per_node': more than the 1,048,576 ranks allowed" in error(response)["message"]
    assert not Attempt.objects.exists()
    assert stored_bundles() == []
    assert staging_left() == []
