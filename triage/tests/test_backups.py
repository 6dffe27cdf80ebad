"""Backups that restore: ``manage.py backup``, a wiped database and bundle store, ``manage.py restore``, and every
attempt, diagnosis, piece of evidence, review, rule revision, regression case and evidence excerpt is back, and every
bundle byte for byte; with the bundles in the local folder and in an object store (a real S3-protocol server)."""

import os
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from access.roles import TRIAGER
from diagnoses import bundle_store, selectors
from diagnoses.models import Attempt, Diagnosis, Evidence, Review
from diagnoses.services import reviews
from rules.models import RuleSetRevision
from rules.services import active_revision, revision_create
from workbench.models import RegressionCase
from workbench.services.cases import case_promote

pytestmark = pytest.mark.django_db(transaction=True)
MODELS = (Attempt, Diagnosis, Evidence, Review, RuleSetRevision, RegressionCase)


def files_of(relative: str) -> dict[str, bytes]:
    with bundle_store.local(relative) as bundle:
        return {p.relative_to(bundle).as_posix(): p.read_bytes() for p in Path(bundle).rglob("*") if p.is_file()}


def everything() -> dict:
    """What a restore must bring back: the rows, the excerpts of every piece of evidence, the bundles' bytes."""
    rows = {model.__name__: list(model.objects.order_by("pk").values()) for model in MODELS}
    excerpts = {
        evidence.pk: selectors.bundle_excerpt(attempt=evidence.diagnosis.attempt, ref=evidence.ref, context=3)
        for evidence in Evidence.objects.select_related("diagnosis__attempt").exclude(ref="")
    }
    places = [
        *Attempt.objects.values_list("bundle", flat=True),
        *RegressionCase.objects.values_list("bundle", flat=True),
    ]
    return {"rows": rows, "excerpts": excerpts, "bundles": {place: files_of(place) for place in places}}


@pytest.fixture(params=["folder", "object store"])
def bundles_in(request):
    if request.param == "object store":
        request.getfixturevalue("object_store")
    return request.param


def test_a_backup_restores_byte_for_byte(bundles_in, transactional_roles, store, make_bundle, person, tmp_path):
    first = store(make_bundle(job_id="801"))
    store(make_bundle(job_id="802", faulty="node03"))
    review = reviews.review_create(diagnosis=first.current_diagnosis, reviewer=person(TRIAGER), verdict="confirmed")
    active = active_revision()
    revision_create(ruleset=active.ruleset, text=active.text + "\n", message="a revision to keep", parent=active)
    case_promote(attempt=Attempt.objects.get(pk=first.pk), name="gpu off the bus")
    before = everything()
    assert before["excerpts"]
    assert all(before["excerpts"].values())
    assert len(before["bundles"]) == 3
    assert before["rows"]["Review"][0]["id"] == review.pk

    call_command("backup", str(tmp_path / "backup"))

    for place in before["bundles"]:  # the wipe: every bundle and every row gone
        bundle_store.remove(place)
    call_command("flush", "--noinput")
    assert not Attempt.objects.exists()
    assert not any(bundle_store.exists(place) for place in before["bundles"])

    call_command("restore", str(tmp_path / "backup"), "--yes")

    after = everything()
    assert after["rows"] == before["rows"]
    assert after["excerpts"] == before["excerpts"]
    assert after["bundles"] == before["bundles"]


def test_a_damaged_backup_is_refused_before_anything_is_restored(transactional_roles, store, make_bundle, tmp_path):
    attempt = store(make_bundle(job_id="803"))
    call_command("backup", str(tmp_path / "backup"))
    log = next((tmp_path / "backup" / "bundles" / attempt.bundle).rglob("*.log"))
    with open(log, "ab") as damaged:
        damaged.write(b"one more line\n")
    bundle_store.remove(attempt.bundle)

    with pytest.raises(CommandError, match="its files differ from the manifest's checksums"):
        call_command("restore", str(tmp_path / "backup"), "--yes")
    assert not bundle_store.exists(attempt.bundle)
    with pytest.raises(CommandError, match="not empty"):
        call_command("backup", str(tmp_path / "backup"))
    assert os.listdir(tmp_path / "backup")
