"""Regression cases: a reviewed attempt kept, with a copy of its bundle and what its active review says
the diagnosis should be, as a test of the rules (``case_promote``; ``workbench.regression`` runs them)."""

from __future__ import annotations

import shutil

from django.db import transaction

from diagnoses import bundle_store
from diagnoses.models import Attempt, Review
from diagnoses.services.verdicts import review_active
from workbench.models import RegressionCase

CASES_DIR = "cases"  # under the bundle root


class CaseRejected(Exception):
    """The attempt cannot become a regression case; the message says why."""


def expected_from_review(review: Review) -> dict:
    """What a review says the diagnosis should be: the reviewed diagnosis when confirmed, else the correction."""
    if review.verdict == Review.Verdict.CONFIRMED:
        diagnosis = review.diagnosis
        return {
            "outcome": diagnosis.outcome,
            "domain": diagnosis.domain or None,
            "subdomain": diagnosis.subdomain or None,
            "nodes": sorted(node.name for node in diagnosis.root_cause_nodes.all()),
        }
    if review.verdict == Review.Verdict.CORRECTED:
        return {
            "outcome": review.corrected_outcome,
            "domain": review.corrected_domain or None,
            "subdomain": review.corrected_subdomain or None,
            "nodes": sorted(review.corrected_nodes),
        }
    raise CaseRejected("the review says the evidence is insufficient: it names no outcome to expect")


def case_promote(*, attempt: Attempt, user=None, name: str = "") -> RegressionCase:
    """Keep ``attempt`` as a regression case: a copy of its bundle and what its latest review expects."""
    review = review_active(attempt.pk)  # the verdict of record's review (withdrawn ones do not count)
    if review is None:
        raise CaseRejected(f"attempt {attempt} has no review: only a reviewed attempt can become a regression case")
    expected = expected_from_review(review)
    name = name.strip() or f"{attempt.cluster.name}/{attempt.job.job_id}#{attempt.number}"
    if RegressionCase.objects.filter(name=name).exists():
        raise CaseRejected(f"a regression case named {name!r} already exists")
    location = f"{CASES_DIR}/{bundle_store.new_location()}"
    staging = bundle_store.stage()
    try:
        with bundle_store.local(attempt.bundle) as bundle:
            bundle_store.copy_tree(bundle, staging / "bundle")
        bundle_store.place(staging / "bundle", location)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    try:
        with transaction.atomic():
            return RegressionCase.objects.create(
                name=name,
                attempt=attempt,
                review=review,
                bundle=location,
                expected_outcome=expected["outcome"],
                expected_domain=expected["domain"] or "",
                expected_subdomain=expected["subdomain"] or "",
                expected_nodes=expected["nodes"],
                created_by=user,
            )
    except BaseException:
        bundle_store.remove(location)
        raise
