"""Bundle retention: old attempts lose their bundle (raw logs), never their diagnosis or evidence."""

from datetime import timedelta

import pytest
from django.core.management import call_command
from django.utils import timezone

from diagnoses import bundle_store
from diagnoses.models import Attempt, Evidence
from diagnoses.tasks import prune_bundles

pytestmark = pytest.mark.django_db


@pytest.fixture
def attempts(make_bundle, store):
    old = store(make_bundle(job_id="1"))
    recent = store(make_bundle(job_id="2"))
    Attempt.objects.filter(pk=old.pk).update(end=timezone.now() - timedelta(days=31))
    Attempt.objects.filter(pk=recent.pk).update(end=timezone.now() - timedelta(days=29))
    return old, recent


def test_the_beat_task_removes_bundles_past_the_retention_and_keeps_diagnoses_and_evidence(attempts, settings):
    old, recent = attempts
    evidence = list(Evidence.objects.filter(diagnosis__attempt=old).values_list("text", flat=True))
    settings.FAULTLINE_RETENTION_DAYS = 0
    assert prune_bundles.apply().get() == 0  # no retention period: kept forever

    settings.FAULTLINE_RETENTION_DAYS = 30
    assert prune_bundles.apply().get() == 1

    assert not bundle_store.path_of(old.bundle).exists()
    assert bundle_store.path_of(recent.bundle).is_dir()
    old.refresh_from_db()
    assert old.current_diagnosis.subdomain == "gpu.bus"
    assert list(Evidence.objects.filter(diagnosis__attempt=old).values_list("text", flat=True)) == evidence
    assert evidence


def test_the_pages_of_an_attempt_whose_bundle_was_removed(attempts, settings, client_for):
    old, _ = attempts
    call_command("prune_bundles", "--days", "30")
    viewer = client_for("viewer")
    evidence = Evidence.objects.filter(diagnosis__attempt=old).first()

    assert viewer.get(f"/attempts/{old.pk}/").status_code == 200
    assert viewer.get(f"/attempts/{old.pk}/evidence/{evidence.pk}/context", HTTP_HX_REQUEST="true").status_code == 200
    assert viewer.get(f"/attempts/{old.pk}/bundle.tar.gz").status_code == 404


def test_the_command_dry_run_removes_nothing_and_an_attempt_in_analysis_keeps_its_bundle(attempts, capsys):
    old, _ = attempts
    call_command("prune_bundles", "--days", "30", "--dry-run")
    assert "1 bundle(s) of attempts that ended more than 30 days ago would be removed" in capsys.readouterr().out
    assert bundle_store.path_of(old.bundle).is_dir()

    Attempt.objects.filter(pk=old.pk).update(analysis_state="analysing")
    call_command("prune_bundles", "--days", "30")
    assert bundle_store.path_of(old.bundle).is_dir()


def test_the_daily_task_sweeps_what_killed_uploads_left_in_staging(bundle_root):
    import os
    import time

    incoming = bundle_root / ".incoming"
    (incoming / "tmpold" / "bundle").mkdir(parents=True)
    (incoming / "tmpnew").mkdir()
    hours_ago = time.time() - 7 * 3600
    os.utime(incoming / "tmpold", (hours_ago, hours_ago))

    prune_bundles.apply()

    assert [entry.name for entry in incoming.iterdir()] == ["tmpnew"]
