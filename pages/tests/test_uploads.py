"""The upload page: who may use it, the attempt it stores, and its refusals, word for word the API's for the same
body; the attempt page that waits for the analysis, then shows it."""

import gzip
import io
import tarfile

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from access.roles import TRIAGER, VIEWER
from diagnoses.models import Attempt
from diagnoses.services import analysis, attempts

UPLOAD = "/upload/"
ATTEMPT = (
    b'{"cluster": "c", "scheduler": "slurm", "job_id": "1", "nodes": ["n1"], "start": "2026-11-02T10:00:00Z", '
    b'"end": "2026-11-02T10:30:00Z", "state": "FAILED"}'
)


def archive(*members: tuple[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as packed:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            packed.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


@pytest.fixture
def triager(client_for):
    return client_for(TRIAGER, "tess")


def post(client, body: bytes, *, json: bool = False, name: str = "b.tgz"):
    headers = {"HTTP_ACCEPT": "application/json"} if json else {}
    return client.post(UPLOAD, {"bundle": SimpleUploadedFile(name, body, "application/gzip")}, **headers)


def test_only_those_who_may_upload_see_the_page_and_its_buttons(client_for, triager, db):
    page = triager.get(UPLOAD).content.decode()
    assert 'enctype="multipart/form-data"' in page
    assert 'data-too-large="the upload is larger than 268,435,456 bytes"' in page
    for where in (reverse("pages:job-list"), reverse("pages:cluster-status")):
        assert 'href="/upload/">Upload a bundle</a>' in triager.get(where).content.decode()
    viewer = client_for(VIEWER)
    assert viewer.get(UPLOAD).status_code == 403
    assert viewer.post(UPLOAD).status_code == 403
    assert "Upload a bundle" not in viewer.get(reverse("pages:job-list")).content.decode()


def test_a_bundle_uploaded_without_the_script_leads_to_its_attempt(triager, make_bundle, tar_gz, bundle_root):
    response = post(triager, tar_gz(make_bundle(job_id="77")))
    attempt = Attempt.objects.get()
    assert response.status_code == 302
    assert response["Location"] == f"/attempts/{attempt.pk}/"
    page = triager.get(response["Location"]).content.decode()
    assert "Job 77 on dgx-a stored; its analysis is queued." in page
    assert attempt.job.job_id == "77"


def test_the_script_gets_json_with_the_attempts_page(triager, make_bundle, tar_gz, bundle_root):
    response = post(triager, tar_gz(make_bundle(job_id="78", attempt=2)), json=True)
    attempt = Attempt.objects.get()
    assert response.status_code == 202
    assert response.json() == {"id": attempt.pk, "page_url": f"http://testserver/attempts/{attempt.pk}/",
                               "analysis_state": "queued"}  # fmt: skip


@pytest.mark.parametrize(
    "body",
    [
        b"just some text",
        gzip.compress(b"plain text, gzip-compressed" * 40),
        archive(("../attempt.json", ATTEMPT)),
        archive(("logs/x.log", b"x")),
        archive(("attempt.json", b"{not json")),
        archive(("attempt.json", ATTEMPT[:-1] + b', "colour": "red"}')),
        archive(("attempt.json", ATTEMPT.replace(b"2026-11-02T10:30:00Z", b"yesterday"))),
    ],
)
def test_a_refusal_is_the_apis_word_for_word(triager, api_client_for, body, bundle_root):
    api = api_client_for(TRIAGER, "api")
    answer = api.post("/api/v1/attempts", {"bundle": SimpleUploadedFile("b.tgz", body)}, format="multipart")
    assert answer.status_code == 400
    expected = answer.json()["error"]

    as_json = post(triager, body, json=True)
    assert as_json.status_code == 400
    assert as_json.json() == {"error": expected}
    as_page = post(triager, body)
    assert as_page.status_code == 400
    assert f"Refused: {expected['message']}" in as_page.content.decode().replace("&#x27;", "'")
    assert not Attempt.objects.exists()


def test_too_large_and_already_stored_are_refused_as_the_api_refuses_them(
    triager, api_client_for, make_bundle, tar_gz, settings, bundle_root
):
    body = tar_gz(make_bundle(job_id="80"))
    settings.FAULTLINE_UPLOAD_MAX_BYTES = 100
    api = api_client_for(TRIAGER, "api")
    too_large = api.post("/api/v1/attempts", {"bundle": SimpleUploadedFile("b.tgz", body)}, format="multipart")
    assert post(triager, body, json=True).json() == too_large.json()
    assert too_large.json()["error"]["message"] == "the upload is larger than 100 bytes"
    assert 'data-too-large="the upload is larger than 100 bytes"' in triager.get(UPLOAD).content.decode()

    settings.FAULTLINE_UPLOAD_MAX_BYTES = 1 << 20
    stored = post(triager, body, json=True).json()
    duplicate = api.post("/api/v1/attempts", {"bundle": SimpleUploadedFile("b.tgz", body)}, format="multipart")
    again = post(triager, body, json=True)
    assert (duplicate.status_code, again.status_code) == (409, 409)
    assert again.json() == {**duplicate.json(), "stored_url": stored["page_url"]}
    page = post(triager, body).content.decode()
    assert f'<a href="/attempts/{stored["id"]}/">The attempt already stored</a>' in page


def test_the_attempt_page_waits_for_the_analysis_then_shows_it(triager, make_bundle, bundle_root):
    attempt = attempts.attempt_ingest_directory(path=make_bundle(job_id="90"))  # queued: its task runs on commit
    page = triager.get(f"/attempts/{attempt.pk}/").content.decode()
    assert 'id="analysis-pending"' in page
    assert 'hx-trigger="every 2s"' in page
    polled = {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "analysis-pending"}
    waiting = triager.get(f"/attempts/{attempt.pk}/", **polled)
    assert waiting.content.decode().startswith('<p id="analysis-pending"')
    assert "queued" in waiting.content.decode()

    analysis.attempt_analyse(attempt_id=attempt.pk)
    done = triager.get(f"/attempts/{attempt.pk}/", **polled)
    assert done["HX-Refresh"] == "true"
    page = triager.get(f"/attempts/{attempt.pk}/").content.decode()
    assert 'id="analysis-pending"' not in page
    assert "The engine's diagnosis" in page


def test_the_form_may_ask_for_the_stores_history(triager, make_bundle, store, tar_gz, bundle_root):
    from datetime import timedelta

    from diagnoses import bundle_store

    page = triager.get(UPLOAD).content.decode()
    assert 'name="history"' in page
    store(make_bundle(job_id="800"))  # Xid 79 on node02
    later = make_bundle.start + timedelta(days=1)
    plain = post(triager, tar_gz(make_bundle(job_id="800", attempt=1, faulty=None, start=later)), json=True).json()
    asked = triager.post(
        UPLOAD,
        {"bundle": SimpleUploadedFile("b.tgz", tar_gz(make_bundle(job_id="800", attempt=2, faulty=None, start=later)),
                                      "application/gzip"), "history": "on"},
        HTTP_ACCEPT="application/json",
    ).json()  # fmt: skip
    assert bundle_store.open_file(Attempt.objects.get(pk=plain["id"]).bundle, "history/nodes.json") is None
    with bundle_store.open_file(Attempt.objects.get(pk=asked["id"]).bundle, "history/nodes.json") as nodes:
        assert b'"node": "node02"' in nodes.read()
