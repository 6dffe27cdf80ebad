"""Pages survive their data: each hostile upload the API accepts (``diagnoses/tests/hostile.py``) is stored and
analysed, then every page and partial that shows it is rendered for a viewer (lists, the attempt page and
its parts, its JSON and bundle, the lines around each piece of evidence, each node's page, the API's
views, the workbench's trial) and must answer without a server error."""

import io
from urllib.parse import quote

import pytest
from django.test import Client

from diagnoses.bundle_store import BundleRejected
from diagnoses.models import Attempt, Evidence
from diagnoses.services import analysis, attempts
from diagnoses.tests.hostile import LIMITS, cases

pytestmark = pytest.mark.django_db
ACCEPTED = [case for case in cases() if case.expect != "reject"]
HTMX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def viewer(client_for, settings) -> Client:
    for name, value in LIMITS.items():
        setattr(settings, name, value)
    return client_for("viewer")


def urls_of(attempt: Attempt) -> list[tuple[str, dict]]:
    """(URL, extra headers) of every page and partial showing the attempt."""
    pk = attempt.pk
    found = [
        ("/", {}),
        ("/jobs/", {}),
        ("/jobs/", {**HTMX, "HTTP_HX_TARGET": "attempt-table"}),
        (f"/jobs/?cluster={quote(attempt.cluster.name)}&q={quote(attempt.job.job_id)}", {}),
        ("/triage/", {}),
        ("/triage/", {**HTMX, "HTTP_HX_TARGET": "queue-table"}),
        ("/triage/?tab=reviewed", {}),
        ("/clusters/", {}),
        ("/clusters/", {**HTMX, "HTTP_HX_TARGET": "cluster-status"}),
        (f"/attempts/{pk}/", {}),
        (f"/attempts/{pk}/", {**HTMX, "HTTP_HX_TARGET": "timeline"}),
        (f"/attempts/{pk}/diagnosis.json", {}),
        (f"/attempts/{pk}/bundle.tar.gz", {}),
        (f"/api/v1/attempts/{pk}", {}),
        (f"/api/v1/attempts?cluster={quote(attempt.cluster.name)}", {}),
        ("/api/v1/evidence", {}),
        ("/api/v1/events", {}),
        (f"/rules/sets/default/r1/try?attempt={pk}", {}),
    ]
    for evidence in Evidence.objects.filter(diagnosis__attempt=attempt):
        found.append((f"/attempts/{pk}/evidence/{evidence.pk}/context", HTMX))
        found.append((f"/api/v1/evidence/{evidence.pk}/excerpt?context=50", {}))
    for node in attempt.cluster.nodes.all():
        path = f"/nodes/{quote(attempt.cluster.name, safe='')}/{quote(node.name, safe='')}/"
        found += [(path, {}), (path, {**HTMX, "HTTP_HX_TARGET": "node-attempts"})]
    return found


@pytest.mark.parametrize("case", ACCEPTED, ids=[case.name for case in ACCEPTED])
def test_every_page_renders_a_stored_hostile_attempt(viewer, case):
    try:
        stored = attempts.attempt_ingest_archive(stream=io.BytesIO(case.body), analyse=False)
    except BundleRejected as exc:  # nothing to show (the API's test checks the refusal itself)
        pytest.skip(f"refused: {exc}")
    analysis.attempt_analyse(attempt_id=stored.pk)
    attempt = Attempt.objects.select_related("cluster", "job").get(pk=stored.pk)

    failures = []
    for url, headers in urls_of(attempt):
        response = viewer.get(url, **headers)
        body = b"".join(response.streaming_content) if response.streaming else response.content
        if response.status_code != 200:
            failures.append((url, response.status_code, body[:200]))
    assert failures == []
    assert attempt.analysis_state in ("analysed", "failed")
