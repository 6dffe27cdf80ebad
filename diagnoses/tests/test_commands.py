"""ingest, export-bundle (then diagnose: the same bytes), reanalyse and load_demo."""

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from diagnoses.models import Attempt, Diagnosis

pytestmark = pytest.mark.django_db(transaction=True)  # commands commit, and analysis runs on commit


def run(*args) -> str:
    out = StringIO()
    call_command(*args, stdout=out, stderr=StringIO())
    return out.getvalue()


def test_ingest_takes_bundles_and_folders_of_bundles(make_bundle, tmp_path):
    single = make_bundle(job_id="1")
    make_bundle(job_id="2")
    make_bundle(job_id="3", cluster="dgx-b")

    first = run("ingest", str(single))
    second = run("ingest", str(tmp_path / "bundles"))

    assert first.strip() == "1 stored, 0 already stored, 0 rejected"
    assert second.strip() == "2 stored, 1 already stored, 0 rejected"
    assert sorted(Attempt.objects.values_list("job__job_id", "analysis_state")) == [
        ("1", "analysed"),
        ("2", "analysed"),
        ("3", "analysed"),
    ]


def test_ingest_reports_rejected_bundles(make_bundle):
    bad = make_bundle(colour="red")

    with pytest.raises(CommandError, match="1 bundle\\(s\\) rejected"):
        run("ingest", str(bad), str(make_bundle(job_id="2")))

    assert list(Attempt.objects.values_list("job__job_id", flat=True)) == ["2"]


def test_ingest_without_analysis_and_a_missing_path(make_bundle, tmp_path):
    run("ingest", "--no-analyse", str(make_bundle()))
    assert Attempt.objects.get().analysis_state == "received"

    with pytest.raises(CommandError, match="neither a bundle nor a folder of bundles"):
        run("ingest", str(tmp_path / "nowhere"))


def test_an_exported_bundle_diagnoses_to_the_stored_diagnosis_byte_for_byte(make_bundle, tmp_path, diagnose_command):
    run("ingest", str(make_bundle(slow_lines=5)))
    attempt = Attempt.objects.get()
    out = tmp_path / "exported"

    run("export-bundle", "dgx-a/48213#0", str(out))
    printed = diagnose_command(str(out))

    assert printed.returncode == 0, printed.stderr
    assert printed.stdout == attempt.current_diagnosis.document_json


def test_export_refuses_an_unknown_attempt_or_an_existing_folder(make_bundle, tmp_path):
    run("ingest", "--no-analyse", str(make_bundle()))

    with pytest.raises(CommandError, match="no stored attempt 'dgx-a/1'"):
        run("export-bundle", "dgx-a/1", str(tmp_path / "a"))
    with pytest.raises(CommandError, match="already exists"):
        run("export-bundle", str(Attempt.objects.get().pk), str(tmp_path))


def test_reanalyse_selects_by_cluster_and_date(make_bundle):
    run("ingest", "--no-analyse", str(make_bundle(job_id="1")))
    run("ingest", "--no-analyse", str(make_bundle(job_id="2", start=make_bundle.start.replace(day=5))))
    run("ingest", "--no-analyse", str(make_bundle(job_id="3", cluster="dgx-b")))

    assert run("reanalyse", "--since", "2026-11-04").strip() == "1 attempt(s) queued for analysis"
    assert set(Diagnosis.objects.values_list("attempt__job__job_id", flat=True)) == {"2"}
    assert run("reanalyse", "--cluster", "dgx-b").strip() == "1 attempt(s) queued for analysis"
    assert run("reanalyse", "--all").strip() == "3 attempt(s) queued for analysis"
    assert Diagnosis.objects.count() == 3  # one per attempt and revision, however often re-analysed
    assert set(Attempt.objects.values_list("analysis_state", flat=True)) == {"analysed"}


def test_reanalyse_refuses_unclear_selections():
    with pytest.raises(CommandError, match="not an ISO 8601 date"):
        run("reanalyse", "--since", "last week")
    with pytest.raises(CommandError, match="no stored attempts on this cluster"):
        run("reanalyse", "--cluster", "nowhere")


def test_load_demo_ingests_the_demo_data_set_once():
    pytest.importorskip("demo.dataset", reason="the demo package (branch demo) is not merged yet")

    output = run("load_demo", "--if-empty")
    stored = Attempt.objects.count()

    assert stored >= 24
    assert Attempt.objects.values("cluster").distinct().count() == 3
    assert f"{stored} stored" in output
    assert "not loaded again" in run("load_demo", "--if-empty")
    assert set(Attempt.objects.values_list("analysis_state", flat=True)) == {"analysed"}
