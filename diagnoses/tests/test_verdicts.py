"""The verdict of record (diagnoses/services/verdicts.py): the diagnosis's until a review, the active review's then;
supersede and withdraw; reanalysis that agrees with the review, changes nothing, or disagrees; the migration that
fills it for stored attempts."""

from importlib import import_module

import pytest
from django.apps import apps

from access.roles import TRIAGER
from demo.bundles import example
from diagnoses.models import Attempt, Review
from diagnoses.services import analysis, reviews
from rules import services as rules_services

pytestmark = pytest.mark.django_db


@pytest.fixture
def attempt(store, make_bundle):
    """Xid 79 on node02: attributed to hardware / gpu.bus on node02."""
    return store(make_bundle(job_id="1"))


@pytest.fixture
def triager(person):
    return person(TRIAGER, "tess")


def verdict_of(attempt: Attempt) -> tuple:
    attempt = Attempt.objects.get(pk=attempt.pk)
    nodes = sorted(attempt.verdict_nodes.values_list("name", flat=True))
    return (attempt.verdict_source, attempt.verdict_outcome, attempt.verdict_domain, attempt.verdict_subdomain, nodes)


def queue_flags(attempt: Attempt) -> tuple[bool, bool]:
    attempt = Attempt.objects.get(pk=attempt.pk)
    return attempt.needs_review, attempt.engine_disagrees


def correct(attempt, reviewer, subdomain="gpu.memory", nodes=("node03",)) -> Review:
    return reviews.review_create(
        diagnosis=attempt.current_diagnosis,
        reviewer=reviewer,
        verdict="corrected",
        corrected_outcome="attributed",
        corrected_domain="hardware",
        corrected_subdomain=subdomain,
        corrected_nodes=list(nodes),
    )


def reanalyse_with(text: str, attempt: Attempt) -> None:
    """Activate a revision of the default rule set with ``text`` and analyse the attempt with it."""
    first = rules_services.active_revision()
    revision = rules_services.revision_create(ruleset=first.ruleset, text=text, parent=first, message="test")
    rules_services.revision_activate(revision=revision)
    analysis.attempt_analyse(attempt_id=attempt.pk)


def test_an_analysed_attempt_has_its_diagnosis_as_verdict(attempt):
    assert verdict_of(attempt) == ("engine", "attributed", "hardware", "gpu.bus", ["node02"])
    assert queue_flags(attempt) == (False, False)


def test_an_unattributed_attempt_waits_in_the_queue_until_reviewed(store, make_bundle, triager):
    attempt = store(make_bundle(job_id="2", faulty=None))
    assert verdict_of(attempt) == ("engine", "unattributed", "", "", [])
    assert queue_flags(attempt) == (True, False)

    reviews.review_create(diagnosis=attempt.current_diagnosis, reviewer=triager, verdict="insufficient_evidence")

    assert verdict_of(attempt) == ("review", "unattributed", "", "", [])
    assert queue_flags(attempt) == (False, False)


def test_a_correction_is_the_verdict_and_names_who_gave_it(attempt, triager):
    review = correct(attempt, triager)

    assert verdict_of(attempt) == ("review", "attributed", "hardware", "gpu.memory", ["node03"])
    stored = Attempt.objects.select_related("verdict_review__reviewer").get(pk=attempt.pk)
    assert (stored.verdict_review, stored.verdict_review.reviewer.username) == (review, "tess")


def test_a_new_review_supersedes_and_withdrawing_it_brings_back_the_one_before(attempt, triager, person):
    first = correct(attempt, triager)
    second = reviews.review_create(diagnosis=attempt.current_diagnosis, reviewer=person(TRIAGER, "rita"),
                                   verdict="confirmed")  # fmt: skip
    assert verdict_of(attempt) == ("review", "attributed", "hardware", "gpu.bus", ["node02"])
    assert Attempt.objects.get(pk=attempt.pk).verdict_review == second

    reviews.review_withdraw(review=second, by=triager)

    assert verdict_of(attempt) == ("review", "attributed", "hardware", "gpu.memory", ["node03"])
    assert Attempt.objects.get(pk=attempt.pk).verdict_review == first
    second.refresh_from_db()
    assert (second.withdrawn is not None, second.withdrawn_by) == (True, triager)
    assert Review.objects.count() == 2  # the history stays

    reviews.review_withdraw(review=first, by=triager)
    assert verdict_of(attempt) == ("engine", "attributed", "hardware", "gpu.bus", ["node02"])
    with pytest.raises(Exception, match="already withdrawn"):
        reviews.review_withdraw(review=first, by=triager)


def test_reanalysis_that_changes_nothing_leaves_a_corrected_attempt_reviewed(attempt, triager):
    correct(attempt, triager)
    before = attempt.current_diagnosis_id

    reanalyse_with(rules_services.active_revision().text + "\n# a comment\n", attempt)

    assert Attempt.objects.get(pk=attempt.pk).current_diagnosis_id != before  # a new diagnosis, the same answer
    assert verdict_of(attempt) == ("review", "attributed", "hardware", "gpu.memory", ["node03"])
    assert queue_flags(attempt) == (False, False)


def test_reanalysis_that_lands_on_the_review_leaves_it_reviewed(attempt, triager):
    correct(attempt, triager, subdomain="gpu.firmware", nodes=("node02",))

    reanalyse_with(rules_services.active_revision().text.replace("subdomain: gpu.bus", "subdomain: gpu.firmware"),
                   attempt)  # fmt: skip

    assert Attempt.objects.get(pk=attempt.pk).current_diagnosis.subdomain == "gpu.firmware"
    assert queue_flags(attempt) == (False, False)


def test_reanalysis_that_disagrees_puts_the_attempt_back_in_the_queue_flagged(attempt, triager):
    reviews.review_create(diagnosis=attempt.current_diagnosis, reviewer=triager, verdict="confirmed")

    reanalyse_with(rules_services.active_revision().text.replace("subdomain: gpu.bus", "subdomain: gpu.firmware"),
                   attempt)  # fmt: skip

    assert verdict_of(attempt) == ("review", "attributed", "hardware", "gpu.bus", ["node02"])  # the review stands
    assert queue_flags(attempt) == (True, True)

    reviews.review_create(diagnosis=Attempt.objects.get(pk=attempt.pk).current_diagnosis, reviewer=triager,
                          verdict="confirmed")  # fmt: skip
    assert verdict_of(attempt) == ("review", "attributed", "hardware", "gpu.firmware", ["node02"])
    assert queue_flags(attempt) == (False, False)


def test_picking_a_candidate_of_an_ambiguous_attempt(store, tmp_path, triager):
    attempt = store(example("two-hardware-faults", 3, tmp_path / "ambiguous").path)
    document = attempt.current_diagnosis.document
    assert (document["outcome"], queue_flags(attempt)) == ("ambiguous", (True, False))
    candidate = document["candidates"][1]

    reviews.review_create(
        diagnosis=attempt.current_diagnosis,
        reviewer=triager,
        verdict="corrected",
        corrected_outcome="attributed",
        corrected_domain=candidate["domain"],
        corrected_subdomain=candidate["subdomain"],
        corrected_nodes=candidate["nodes"],
    )

    expected = ("review", "attributed", candidate["domain"], candidate["subdomain"], sorted(candidate["nodes"]))
    assert verdict_of(attempt) == expected
    assert queue_flags(attempt) == (False, False)


def test_the_migration_fills_the_verdicts_of_stored_attempts(attempt, store, make_bundle, triager):
    unattributed = store(make_bundle(job_id="2", faulty=None))
    correct(attempt, triager)
    Attempt.objects.update(verdict_source="", verdict_outcome="", verdict_domain="", verdict_subdomain="",
                           verdict_review=None, needs_review=False)  # fmt: skip
    Attempt.verdict_nodes.through.objects.all().delete()

    # the data step of the migration, on the current models (migrating back and forth inside the test's
    # transaction is refused: the rows' deferred constraint checks are pending)
    import_module("diagnoses.migrations.0008_verdict").fill_verdicts(apps, None)

    assert verdict_of(attempt) == ("review", "attributed", "hardware", "gpu.memory", ["node03"])
    assert verdict_of(unattributed) == ("engine", "unattributed", "", "", [])
    assert queue_flags(unattributed) == (True, False)
