"""The hostile set (``diagnoses/tests/hostile.py``, over 60 kinds) posted to both upload endpoints: never a 5xx,
a refusal in the error format that stores nothing and leaves no staging, an acceptance as documented."""

import pytest

from api.tests.errors import error
from diagnoses.models import Attempt, Cluster, Diagnosis, Job, Node
from diagnoses.tests.hostile import LIMITS, cases

CASES = cases()
ENDPOINTS = {"/api/v1/attempts": 202, "/api/v1/analyze": 200}


def test_the_set_has_over_sixty_kinds():
    assert len({case.name for case in CASES}) == len(CASES) > 60


@pytest.fixture
def triager(api_client_for, settings):
    for name, value in LIMITS.items():
        setattr(settings, name, value)
    return api_client_for("triager")


def rows() -> list[int]:
    return [model.objects.count() for model in (Cluster, Job, Attempt, Node, Diagnosis)]


@pytest.mark.parametrize("endpoint", ENDPOINTS)
@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_a_hostile_upload_is_refused_cleanly_or_accepted(triager, case, endpoint, stored_bundles, staging_left):
    before = rows()

    response = triager.post(endpoint, data=case.body, content_type="application/gzip")

    assert response.status_code < 500, response.content[:300]
    assert staging_left() == []
    refused = 400 <= response.status_code < 500
    if refused:
        assert error(response)["message"]
        assert (rows(), stored_bundles()) == (before, [])
    if endpoint == "/api/v1/analyze":
        assert (rows(), stored_bundles()) == (before, [])
    if case.expect != "either":
        assert response.status_code == (400 if case.expect == "reject" else ENDPOINTS[endpoint]), error(response)
    if response.status_code == 202:
        assert Attempt.objects.filter(pk=response.json()["id"], analysis_state="queued").exists()
