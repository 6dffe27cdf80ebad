"""ingest, export-bundle (then diagnose: the same bytes), reanalyse and load_demo."""

import json
import re
from io import StringIO

import pytest
from django.conf import settings
from django.core.management import CommandError, call_command

from diagnoses import selectors
from diagnoses.cluster_connectors import scheduler_of
from diagnoses.models import Attempt, Cluster, Diagnosis

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
    # a requeue, and a job that worked before it failed: what the job page and "What changed" show
    second = Attempt.objects.filter(number=1).order_by("start")
    assert sorted(attempt.state for attempt in second) == ["FAILED", "TIMEOUT"]
    failed = second.get(state="FAILED")
    good, matched_by = selectors.attempt_last_good(failed)
    assert (good.job_id, good.number, good.state, matched_by) == (failed.job_id, 0, "COMPLETED", "job")
    changes = selectors.attempt_changes(failed)
    assert changes["software"][0] == {"name": "NCCL", "good": "2.21.5", "now": "2.23.4", "changed": True}

    # dgx-a's scheduler is the demo scheduler: a drain is recorded beside the bundle store, no node is touched
    cluster = Cluster.objects.get(name="dgx-a")
    assert (cluster.connector, cluster.has_demo_scheduler, cluster.enabled) == ("demo", True, True)
    answer = scheduler_of(cluster).drain_node("dgx-b200-0417", "faultline: xid 79")
    record = settings.FAULTLINE_BUNDLE_ROOT.parent / "demo-scheduler" / ".demo-nodes.json"
    assert answer.endswith(f"(demo scheduler, no node touched: recorded in {record})")
    assert json.loads(record.read_text())["nodes"]["dgx-b200-0417"]["state"] == "DRAIN"
    assert "demo scheduler" in output


def test_the_demo_login_keeps_its_password_from_start_to_start(settings, tmp_path, transactional_roles):
    """``make run`` calls demo_login at each start: the same password (kept in <var>/demo_password, its owner's only)
    and the same session hash, so nobody is signed out; --reset makes a new one; a password changed since is left
    alone and not shown."""
    from django.contrib.auth import get_user_model

    settings.VAR_DIR = tmp_path / "var"
    first = run("demo_login", "--url", "http://localhost:8123")
    password = re.fullmatch(r"Sign in at http://localhost:8123 as demo with the password (\S+)\n", first)[1]
    kept = tmp_path / "var" / "demo_password"
    assert kept.read_text() == password + "\n"
    assert kept.stat().st_mode & 0o777 == 0o600
    demo = get_user_model().objects.get(username="demo")
    session = demo.get_session_auth_hash()
    assert demo.is_superuser
    assert demo.groups.filter(name="admin").exists()

    assert run("demo_login") == f"Sign in at http://localhost:8000 as demo with the password {password}\n"
    assert get_user_model().objects.get(username="demo").get_session_auth_hash() == session  # nobody signed out

    reset = re.search(r"the password (\S+)$", run("demo_login", "--reset"))[1]
    assert reset != password
    assert kept.read_text() == reset + "\n"
    demo = get_user_model().objects.get(username="demo")
    assert demo.check_password(reset)
    assert demo.get_session_auth_hash() != session

    demo.set_password("chosen in the admin")
    demo.save()
    assert "its password was changed since it was made, so it is not shown" in run("demo_login")
    assert get_user_model().objects.get(username="demo").check_password("chosen in the admin")
