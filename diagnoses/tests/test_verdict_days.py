"""The daily rollup of the verdicts of record (diagnoses/services/verdict_days.py): after any sequence of analyses,
reanalyses, reviews, withdrawals, edits and deletions it equals the rollup computed from the attempts; the migration
and ``manage.py verdict_days`` build it from stored attempts; workers recording at once lose no count."""

import random
import threading
from datetime import UTC, datetime, timedelta
from importlib import import_module

import pytest
from django.apps import apps
from django.core.management import CommandError, call_command
from django.db import connection

from access.roles import TRIAGER
from diagnoses.models import Attempt, Job, Review, VerdictDay, VerdictNodeDay
from diagnoses.services import analysis, reviews, verdict_days
from rules import services as rules_services

DAY = datetime(2026, 11, 20, 23, 40, tzinfo=UTC)  # the attempt of start DAY ends after midnight, the next day


def assert_exact() -> None:
    stored, counted = verdict_days.verdict_days_stored(), verdict_days.verdict_days_counted()
    assert stored == counted
    assert sum(stored.values()) == Attempt.objects.count()
    assert verdict_days.verdict_node_days_stored() == verdict_days.verdict_node_days_counted()


def revise(change) -> None:
    """A new revision of the default rule set, ``change`` applied to its text, made active."""
    first = rules_services.active_revision()
    revision = rules_services.revision_create(ruleset=first.ruleset, text=change(first.text), parent=first, message="t")
    rules_services.revision_activate(revision=revision)


@pytest.mark.django_db
def test_the_rollup_counts_each_attempt_in_the_row_of_its_day_cluster_and_verdict(store, make_bundle):
    store(make_bundle(job_id="1", start=DAY))
    waiting = verdict_days.attempt_key(store(make_bundle(job_id="2", faulty=None, cluster="eos")).pk)

    assert waiting[1:6] == (Attempt.objects.get(job__job_id="2").cluster_id, "unattributed", "", "", True)
    rows = VerdictDay.objects.filter(attempts__gt=0).order_by("outcome")
    assert list(rows.values_list("day", "outcome", "domain", "subdomain", "needs_review", "attempts")) == [
        (DAY.date() + timedelta(days=1), "attributed", "hardware", "gpu.bus", False, 1),
        (waiting[0], "unattributed", "", "", True, 1),
    ]
    assert_exact()


@pytest.mark.django_db
def test_the_rollup_stays_exact_through_any_sequence_of_changes(store, make_bundle, person):
    triager = person(TRIAGER, "tess")
    rnd = random.Random(13)
    attempts = [
        store(make_bundle(job_id=str(n), faulty=rnd.choice(["node02", "node03", None]),
                          cluster=rnd.choice(["dgx-a", "eos"]), start=DAY - timedelta(days=rnd.randrange(40))))
        for n in range(5)
    ]  # fmt: skip
    assert_exact()

    def review(attempt):
        verdict = rnd.choice(["confirmed", "corrected", "insufficient_evidence"])
        fields = {}
        if verdict == "corrected":
            subdomain = rnd.choice(["gpu.memory", "gpu.bus"])
            fields = {"corrected_outcome": "attributed", "corrected_domain": "hardware",
                      "corrected_subdomain": subdomain, "corrected_nodes": ["node01"]}  # fmt: skip
        reviews.review_create(diagnosis=attempt.current_diagnosis, reviewer=triager, verdict=verdict, **fields)

    def withdraw(attempt):
        active = Review.objects.filter(diagnosis__attempt=attempt, withdrawn=None).first()
        if active is not None:
            reviews.review_withdraw(review=active, by=triager)

    def reanalyse(attempt):
        subdomain = rnd.choice(["gpu.firmware", "gpu.bus"])
        revise(lambda text: text.replace("subdomain: gpu.bus", f"subdomain: {subdomain}"))
        analysis.attempt_analyse(attempt_id=attempt.pk)

    def analyse_again(attempt):
        analysis.attempt_analyse(attempt_id=attempt.pk)

    def edit(attempt):  # what the admin's form does (AttemptAdmin.save_model)
        verdict_days.attempt_uncount(attempt.pk)
        Attempt.objects.filter(pk=attempt.pk).update(end=attempt.end - timedelta(days=rnd.randrange(1, 5)))
        verdict_days.attempt_count(attempt.pk)

    def delete(attempt):
        Attempt.objects.filter(pk=attempt.pk).delete()

    steps = [review, review, withdraw, reanalyse, analyse_again, edit]
    for _ in range(24):
        live = list(Attempt.objects.select_related("current_diagnosis"))
        step = rnd.choice(steps)
        step(rnd.choice(live))
        assert_exact()
    delete(attempts[0])
    assert_exact()
    Job.objects.filter(attempts__pk=attempts[1].pk).delete()  # a cascade
    assert_exact()
    store(make_bundle(job_id="new", start=DAY))
    assert_exact()
    assert Attempt.objects.count() == 4


@pytest.mark.django_db
def test_the_migration_and_the_command_build_the_rollup_of_stored_attempts(store, make_bundle, person):
    store(make_bundle(job_id="1", start=DAY))
    unattributed = store(make_bundle(job_id="2", faulty=None, start=DAY - timedelta(days=3)))
    reviews.review_create(
        diagnosis=unattributed.current_diagnosis, reviewer=person(TRIAGER), verdict="insufficient_evidence"
    )
    expected = verdict_days.verdict_days_stored()
    expected_nodes = verdict_days.verdict_node_days_stored()
    VerdictDay.objects.all().delete()
    VerdictNodeDay.objects.all().delete()

    # the data step of migration 0010 on the current models (migrating inside the test's transaction is refused)
    import_module("diagnoses.migrations.0010_event_counts").build(apps, None)

    assert verdict_days.verdict_days_stored() == expected
    assert verdict_days.verdict_node_days_stored() == expected_nodes
    assert sorted(expected.values()) == [1, 1]
    assert list(expected_nodes.values()) == [1]  # node02, of the attributed one
    VerdictDay.objects.update(attempts=7)
    with pytest.raises(CommandError, match="differ from the attempts"):
        call_command("verdict_days", "--check")
    call_command("verdict_days")
    assert verdict_days.verdict_days_stored() == expected
    call_command("verdict_days", "--check")


@pytest.mark.django_db(transaction=True)
def test_workers_counting_at_once_lose_nothing(store, make_bundle, person):
    """Two threads, each its own connection and transactions, move attempts into and out of the same rows at once."""
    triager = person(TRIAGER, "tess")
    waiting = [store(make_bundle(job_id=str(n), faulty=None, start=DAY)) for n in range(8)]
    key = verdict_days.attempt_key(waiting[0].pk)
    start = threading.Barrier(2)
    failures = []

    def work(mine):
        try:
            start.wait()
            for _ in range(50):  # the upsert alone, hammered
                verdict_days.verdict_days_add({key: 1})
            for attempt in mine:  # and reviews that move the attempts out of the row
                reviews.review_create(
                    diagnosis=attempt.current_diagnosis, reviewer=triager, verdict="insufficient_evidence"
                )
        except Exception as exc:  # reported below, in the test's thread
            failures.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=work, args=(waiting[n::2],)) for n in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert failures == []
    assert VerdictDay.objects.get(**dict(zip(verdict_days.KEY_COLUMNS, key, strict=True))).attempts == 100
    VerdictDay.objects.filter(**dict(zip(verdict_days.KEY_COLUMNS, key, strict=True))).update(attempts=0)
    assert_exact()
    assert verdict_days.verdict_days_stored()[verdict_days.attempt_key(waiting[0].pk)] == 8
