"""One set of review rules: the attempt page's form and ``POST /api/v1/reviews`` go through the one review service
(diagnoses/services/reviews.py), so they refuse the same reviews, naming the same field, and accept the same."""

import pytest
from django.urls import reverse

from access.roles import TRIAGER
from diagnoses.models import Attempt, Review

pytestmark = pytest.mark.django_db
CORRECTED = {"verdict": "corrected", "corrected_outcome": "attributed"}


@pytest.fixture
def attempt(store, make_bundle) -> Attempt:
    """Xid 79 on node02 of node01-node04."""
    return store(make_bundle(job_id="1"))


def through_the_form(client_for, attempt: Attempt, body: dict):
    """The status and the page's text for the field's errors (the form's error list beside the field)."""
    response = client_for(TRIAGER, "form").post(reverse("pages:attempt-review", args=[attempt.pk]), body)
    return response.status_code, response.content.decode()


def through_the_api(api_client_for, attempt: Attempt, body: dict):
    response = api_client_for(TRIAGER, "api").post(
        "/api/v1/reviews", {"diagnosis": attempt.current_diagnosis_id, **body}, format="json"
    )
    return response.status_code, response.json()


@pytest.mark.parametrize(
    ("body", "field", "reason"),
    [
        ({**CORRECTED, "corrected_domain": "network", "corrected_subdomain": "gpu.memory"},
         "corrected_subdomain", "gpu.memory is not a subdomain of network."),
        ({**CORRECTED, "corrected_domain": "hardware", "corrected_subdomain": "gpu.bus",
          "corrected_nodes": ["node02", "elsewhere"]}, "corrected_nodes", "elsewhere"),
        ({**CORRECTED, "corrected_domain": "hardware", "corrected_subdomain": "gpu.bus"},
         "corrected_nodes", "hardware / gpu.bus lies on a node: name the root-cause node."),
        ({**CORRECTED, "corrected_domain": "hardware"},
         "corrected_subdomain", "An attributed outcome names its subdomain."),
        ({"verdict": "corrected"}, "corrected_outcome", "A correction names the corrected outcome."),
        ({"verdict": "corrected", "corrected_outcome": "unattributed", "corrected_nodes": ["node01"]},
         "corrected_outcome", "An unattributed outcome has no domain, subdomain or root-cause nodes."),
        ({"verdict": "corrected", "corrected_outcome": "ambiguous", "corrected_domain": "hardware",
          "corrected_subdomain": "gpu.bus"}, "corrected_subdomain", "An ambiguous outcome has no single subdomain."),
    ],
)  # fmt: skip
def test_the_form_and_the_api_refuse_the_same_reviews_with_the_same_reason(
    attempt, client_for, api_client_for, body, field, reason
):
    form_status, page = through_the_form(client_for, attempt, body)
    api_status, answer = through_the_api(api_client_for, attempt, body)

    assert (form_status, api_status) == (400, 400)
    assert (answer["error"]["field"], reason in answer["error"]["message"]) == (field, True)
    errors = page[page.index(f'name="{field}"') :]
    assert reason in errors[: errors.index("</div>")]  # beside the field
    assert not Review.objects.exists()
    assert Attempt.objects.get(pk=attempt.pk).verdict_source == "engine"


def test_the_form_and_the_api_accept_the_same_correction(attempt, client_for, api_client_for):
    body = {**CORRECTED, "corrected_domain": "hardware", "corrected_subdomain": "gpu.memory",
            "corrected_nodes": ["node03"]}  # fmt: skip

    form_status, _ = through_the_form(client_for, attempt, body)
    api_status, answer = through_the_api(api_client_for, attempt, body)

    assert (form_status, api_status) == (302, 201)
    first, second = Review.objects.order_by("pk")
    fields = ("verdict", "corrected_outcome", "corrected_domain", "corrected_subdomain", "corrected_nodes")
    assert [getattr(first, name) for name in fields] == [getattr(second, name) for name in fields]
    assert [first.withdrawn, second.withdrawn] == [None, None]
    attempt = Attempt.objects.get(pk=attempt.pk)
    assert attempt.verdict_review == second  # the newer supersedes
