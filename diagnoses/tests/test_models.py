"""The database's own guarantees: what the constraints refuse whatever code writes the rows."""

import pytest
from django.contrib.auth.models import User
from django.db import IntegrityError

from diagnoses.models import Attempt, Node, Review
from diagnoses.services import attempts, reviews
from diagnoses.tasks import analyse_attempt

pytestmark = pytest.mark.django_db


@pytest.fixture
def attempt(make_bundle):
    stored = attempts.attempt_ingest_directory(path=make_bundle(), analyse=False)
    analyse_attempt.apply(args=[stored.pk])
    stored.refresh_from_db()
    return stored


def test_an_attempt_number_is_unique_per_job(attempt):
    with pytest.raises(IntegrityError):
        Attempt.objects.create(
            cluster=attempt.cluster,
            job=attempt.job,
            number=attempt.number,
            scheduler="slurm",
            state="FAILED",
            start=attempt.start,
            end=attempt.end,
            record={},
            bundle="elsewhere",
        )


def test_a_node_name_is_unique_per_cluster(attempt):
    with pytest.raises(IntegrityError):
        Node.objects.create(cluster=attempt.cluster, name="node01")


@pytest.mark.parametrize(
    "fields",
    [
        {"verdict": "corrected"},
        {"verdict": "confirmed", "corrected_outcome": "attributed"},
        {"verdict": "insufficient_evidence", "corrected_domain": "storage"},
    ],
)
def test_only_a_correction_carries_a_corrected_outcome(attempt, fields):
    reviewer = User.objects.create_user("erin")

    with pytest.raises(IntegrityError):
        Review.objects.create(diagnosis=attempt.current_diagnosis, reviewer=reviewer, **fields)


def test_a_correction_is_stored_with_its_nodes_sorted(attempt):
    review = reviews.review_create(
        diagnosis=attempt.current_diagnosis,
        reviewer=User.objects.create_user("erin"),
        verdict="corrected",
        corrected_outcome="attributed",
        corrected_domain="network",
        corrected_subdomain="link.infiniband",
        corrected_nodes=["node03", "node01", "node03"],
    )

    assert Review.objects.get().corrected_nodes == ["node01", "node03"]
    assert str(review) == "dgx-a/48213#0: corrected"
