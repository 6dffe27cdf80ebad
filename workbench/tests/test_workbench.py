"""Revisions as drafts, activation (exactly one active, rollback, the audit log), diffs, regression cases,
backtests and reanalyses (bounded, cancelable), and the commands test_rules and rules export|import."""

import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import call_command
from django.urls import reverse

from access.roles import RULE_EDITOR, TRIAGER
from diagnoses.models import Attempt, Diagnosis
from diagnoses.services import attempts, reviews
from engine import RuleSetError
from rules import selectors, services
from rules.models import Activation, RuleSetRevision
from workbench.models import BatchRun
from workbench.regression import cases_run
from workbench.services import batches
from workbench.services.cases import CaseRejected, case_promote
from workbench.tests.workbench import HOT_NODE, THERMAL_RULE, thermal_bundle

pytestmark = pytest.mark.django_db
BASE_DIR = Path(__file__).resolve().parents[2]


@pytest.fixture
def stored(tmp_path, make_bundle, django_capture_on_commit_callbacks):
    """Three analysed attempts: a GPU off the bus (attributed), NCCL timeouts only (unattributed) and the
    demo's thermal slowdown (unattributed by the default pack)."""
    bundles = {
        "bus": make_bundle(job_id="1"),
        "quiet": make_bundle(job_id="2", faulty=None, start=make_bundle.start.replace(day=3)),
        "thermal": thermal_bundle(tmp_path / "thermal"),
    }
    with django_capture_on_commit_callbacks(execute=True):
        stored = {label: attempts.attempt_ingest_directory(path=path) for label, path in bundles.items()}
    for attempt in stored.values():
        attempt.refresh_from_db()
    return stored


def thermal_draft(author=None) -> RuleSetRevision:
    first = services.active_revision()
    return services.revision_create(
        ruleset=first.ruleset, text=first.text + THERMAL_RULE, author=author, message="thermal", parent=first
    )


# Revisions and activation ------------------------------------------------------------------------


def test_the_pack_is_revision_1_and_its_activation_is_logged():
    first = services.active_revision()

    assert [(a.revision, a.previous, a.user) for a in Activation.objects.all()] == [(first, None, None)]


def test_a_saved_draft_is_the_next_revision_and_not_active(django_user_model):
    editor = django_user_model.objects.create_user("ed")

    draft = thermal_draft(editor)

    assert (draft.number, draft.active, draft.parent.number, draft.author) == (2, False, 1, editor)
    assert draft.digest != draft.parent.digest
    assert selectors.revision_engine(draft).ruleset.version == "2"
    assert "site.gpu.thermal" in selectors.revision_engine(draft).ruleset.by_id()
    assert services.active_revision().number == 1


def test_a_draft_with_errors_is_not_saved_and_every_error_has_its_line():
    first = services.active_revision()
    broken = first.text + THERMAL_RULE.replace("domain: hardware", "domain: hardwre").replace("(?P<gpu>", "(?P<gpu")

    with pytest.raises(RuleSetError) as raised:
        services.revision_create(ruleset=first.ruleset, text=broken, parent=first)

    lines = broken.splitlines()
    problems = {(e.field, lines[e.line - 1].strip().split(":")[0]) for e in raised.value.errors}
    assert problems == {("pattern", "pattern"), ("domain", "domain")}
    assert RuleSetRevision.objects.count() == 1


def test_browser_line_ends_are_stored_as_unix_ones():
    first = services.active_revision()

    draft = services.revision_create(ruleset=first.ruleset, text=first.text.replace("\n", "\r\n"), parent=first)

    assert draft.text == first.text
    assert draft.digest == first.digest.replace(first.digest, draft.digest)  # same text, same rules
    assert (
        selectors.revision_engine(draft).ruleset.by_id().keys()
        == selectors.revision_engine(first).ruleset.by_id().keys()
    )


def test_activating_keeps_exactly_one_active_revision_and_logs_who_did_it(django_user_model):
    editor = django_user_model.objects.create_user("ed")
    draft = thermal_draft(editor)

    activation = services.revision_activate(revision=draft, user=editor, message="thermal rule")

    assert list(RuleSetRevision.objects.filter(active=True)) == [draft]
    assert (activation.revision, activation.previous.number, activation.user, activation.message) == (
        draft, 1, editor, "thermal rule"
    )  # fmt: skip
    assert not activation.is_rollback
    assert services.active_revision() == draft


def test_a_rollback_is_the_activation_of_an_older_revision(django_user_model):
    editor = django_user_model.objects.create_user("ed")
    first = services.active_revision()
    draft = thermal_draft(editor)
    services.revision_activate(revision=draft, user=editor, message="thermal rule")

    rollback = services.revision_activate(revision=first, user=editor, message="too many changes")

    assert rollback.is_rollback
    assert rollback.previous == draft
    assert list(RuleSetRevision.objects.filter(active=True)) == [first]
    log = [(a.revision.number, a.previous and a.previous.number, a.message) for a in selectors.activation_list()]
    assert log == [(1, 2, "too many changes"), (2, 1, "thermal rule"), (1, None, "The default rule pack")]


def test_the_active_revision_cannot_be_activated_again():
    with pytest.raises(ValueError, match="already the active revision"):
        services.revision_activate(revision=services.active_revision())
    assert Activation.objects.count() == 1


def test_the_diff_shows_the_added_rule_escaped():
    first = services.active_revision()
    draft = services.revision_create(ruleset=first.ruleset, text=first.text + THERMAL_RULE + "# <b>bold</b>\n")

    table = selectors.revision_diff(first, draft)

    assert selectors.revision_diff_stats(first, draft) == (len((THERMAL_RULE + "# <b>bold</b>\n").splitlines()), 0)
    assert "site.gpu.thermal" in table
    assert 'class="diff_add"' in table
    assert "&lt;b&gt;bold&lt;/b&gt;" in table
    assert "<b>bold</b>" not in table


# Regression cases --------------------------------------------------------------------------------


def review(attempt, user, verdict="confirmed", **correction):
    attempt.refresh_from_db()
    return reviews.review_create(diagnosis=attempt.current_diagnosis, reviewer=user, verdict=verdict, **correction)


def test_only_a_reviewed_attempt_becomes_a_case(stored):
    with pytest.raises(CaseRejected, match="has no review"):
        case_promote(attempt=stored["bus"])


def test_a_case_keeps_a_copy_of_the_bundle_and_the_reviewed_diagnosis(stored, django_user_model, bundle_root):
    person = django_user_model.objects.create_user("tri")
    review(stored["bus"], person)
    review(
        stored["thermal"], person, "corrected", corrected_outcome="attributed", corrected_domain="hardware",
        corrected_subdomain="gpu.thermal", corrected_nodes=[HOT_NODE],
    )  # fmt: skip

    bus = case_promote(attempt=stored["bus"], user=person)
    thermal = case_promote(attempt=stored["thermal"], user=person, name="thermal slowdown")

    assert bus.name == "dgx-a/1#0"
    assert bus.expected == {"outcome": "attributed", "domain": "hardware", "subdomain": "gpu.bus", "nodes": ["node02"]}
    assert thermal.expected["subdomain"] == "gpu.thermal"
    assert (bundle_root / thermal.bundle / "attempt.json").is_file()
    Attempt.objects.filter(pk=stored["thermal"].pk).delete()
    thermal.refresh_from_db()
    assert thermal.attempt is None
    assert (bundle_root / thermal.bundle / "attempt.json").is_file()
    with pytest.raises(CaseRejected, match="already exists"):
        case_promote(attempt=stored["bus"])


def test_an_insufficient_evidence_review_names_no_outcome(stored, django_user_model):
    review(stored["quiet"], django_user_model.objects.create_user("tri"), "insufficient_evidence")

    with pytest.raises(CaseRejected, match="insufficient"):
        case_promote(attempt=stored["quiet"])


def test_cases_pass_or_fail_against_a_revision(stored, django_user_model):
    person = django_user_model.objects.create_user("tri")
    review(stored["bus"], person)
    review(
        stored["thermal"], person, "corrected", corrected_outcome="attributed", corrected_domain="hardware",
        corrected_subdomain="gpu.thermal", corrected_nodes=[HOT_NODE],
    )  # fmt: skip
    case_promote(attempt=stored["bus"])
    case_promote(attempt=stored["thermal"], name="thermal")

    with_pack = {r.name: r for r in cases_run(engine=selectors.revision_engine(services.active_revision()))}
    with_rule = {r.name: r for r in cases_run(engine=selectors.revision_engine(thermal_draft()))}

    assert with_pack["dgx-a/1#0"].passed
    assert not with_pack["thermal"].passed
    assert with_pack["thermal"].problems[0] == "outcome: expected attributed, got unattributed"
    assert with_rule["dgx-a/1#0"].passed
    assert with_rule["thermal"].passed


def test_test_rules_exits_non_zero_when_a_case_fails(stored, django_user_model, tmp_path):
    person = django_user_model.objects.create_user("tri")
    review(
        stored["thermal"], person, "corrected", corrected_outcome="attributed", corrected_domain="hardware",
        corrected_subdomain="gpu.thermal", corrected_nodes=[HOT_NODE],
    )  # fmt: skip
    case_promote(attempt=stored["thermal"], name="thermal")
    rules = tmp_path / "rules.yaml"
    rules.write_text(services.active_revision().text + THERMAL_RULE)

    with pytest.raises(SystemExit) as failed:
        call_command("test_rules")
    assert failed.value.code == 1
    call_command("test_rules", "--rules", str(rules))  # passes: returns normally


def test_test_rules_runs_a_directory_of_cases(tmp_path, capsys):
    thermal_bundle(tmp_path / "cases" / "thermal")
    (tmp_path / "cases" / "thermal" / "expected.json").write_text('{"outcome": "unattributed"}')

    call_command("test_rules", "--no-stored", "--cases", str(tmp_path / "cases"))

    assert "PASS  thermal" in capsys.readouterr().out
    with pytest.raises(SystemExit) as nothing:
        call_command("test_rules", "--no-stored")
    assert nothing.value.code == 2


# Backtests and reanalyses ------------------------------------------------------------------------


def start(kind, revision, **filters):
    return batches.batch_start(kind=kind, revision=revision, filters=filters)


def test_a_backtest_shows_the_changed_diagnoses_and_the_agreement_with_reviews(
    stored, django_user_model, django_capture_on_commit_callbacks
):
    person = django_user_model.objects.create_user("tri")
    review(stored["bus"], person)
    hot = HOT_NODE
    review(
        stored["thermal"], person, "corrected", corrected_outcome="attributed", corrected_domain="hardware",
        corrected_subdomain="gpu.thermal", corrected_nodes=[hot],
    )  # fmt: skip
    draft = thermal_draft()

    with django_capture_on_commit_callbacks(execute=True):
        run = start(BatchRun.Kind.BACKTEST, draft)

    run.refresh_from_db()
    result = run.result
    assert (run.state, run.total, run.done) == ("done", 3, 3)
    assert (result["examined"], result["changed"]) == (3, 1)
    change = result["changes"][0]
    assert change["attempt"] == stored["thermal"].pk
    assert change["before"]["outcome"] == "unattributed"
    assert change["after"] == {
        "outcome": "attributed", "domain": "hardware", "subdomain": "gpu.thermal", "rule": "site.gpu.thermal",
        "nodes": [hot],
    }  # fmt: skip
    before, after = result["agreement"]["before"], result["agreement"]["after"]
    assert result["agreement"]["reviewed"] == 2
    assert before["by_outcome"]["attributed"] == {"total": 2, "correct": 1, "accuracy": 0.5}
    assert after["by_outcome"]["attributed"] == {"total": 2, "correct": 2, "accuracy": 1.0}
    assert (before["node_precision"], after["node_precision"]) == (1.0, 1.0)
    assert (before["false_attributions"], after["false_attributions"]) == (0, 0)
    assert Diagnosis.objects.count() == 3  # a backtest stores no diagnosis


def test_a_backtest_takes_the_filter(stored, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        run = start(BatchRun.Kind.BACKTEST, thermal_draft(), outcome="attributed")
    run.refresh_from_db()

    assert (run.total, run.result["changed"]) == (1, 0)
    with pytest.raises(batches.FilterRejected, match="ended_after"):
        start(BatchRun.Kind.BACKTEST, thermal_draft(), ended_after="yesterday")


def test_a_run_is_bounded_in_attempts_and_in_time(stored, settings, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        limited = batches.batch_start(kind=BatchRun.Kind.BACKTEST, revision=thermal_draft(), filters={}, limit=2)
    limited.refresh_from_db()
    assert (limited.total, limited.done, limited.state) == (2, 2, "done")

    settings.FAULTLINE_BATCH_TIME_LIMIT = 0
    with django_capture_on_commit_callbacks(execute=True):
        timed = start(BatchRun.Kind.BACKTEST, thermal_draft())
    timed.refresh_from_db()
    assert timed.state == "done"
    assert timed.done < 3
    assert timed.stopped_reason.startswith("stopped at the time limit (0 s)")


def test_a_cancelled_run_stops(stored, django_capture_on_commit_callbacks):
    queued = start(BatchRun.Kind.BACKTEST, services.active_revision())  # its task is never run here
    batches.batch_cancel(run=queued)
    assert queued.state == "cancelled"
    assert batches.batch_execute(run_id=queued.pk).done == 0  # a late task does nothing

    running = start(BatchRun.Kind.BACKTEST, services.active_revision())
    BatchRun.objects.filter(pk=running.pk).update(state="running")
    running.refresh_from_db()
    batches.batch_cancel(run=running)
    BatchRun.objects.filter(pk=running.pk).update(state="queued")  # as if its task started after the request
    finished = batches.batch_execute(run_id=running.pk)
    assert (finished.state, finished.done, finished.stopped_reason) == (
        "cancelled",
        0,
        "cancelled after 0 of 3 attempts",
    )


def test_a_reanalysis_stores_diagnoses_of_the_active_revision(stored, django_capture_on_commit_callbacks):
    draft = thermal_draft()
    services.revision_activate(revision=draft, message="thermal")

    with django_capture_on_commit_callbacks(execute=True):
        run = start(BatchRun.Kind.REANALYSIS, draft, outcome="unattributed")

    run.refresh_from_db()
    assert (run.state, run.total, run.result["outcomes"]) == ("done", 2, {"attributed": 1, "unattributed": 1})
    thermal = Attempt.objects.select_related("current_diagnosis__revision").get(pk=stored["thermal"].pk)
    assert thermal.current_diagnosis.revision == draft
    assert (thermal.current_diagnosis.outcome, thermal.current_diagnosis.subdomain) == ("attributed", "gpu.thermal")
    assert thermal.current_diagnosis.document["ruleset"]["version"] == "2"


def test_a_reanalysis_stops_when_another_revision_is_activated(stored, django_capture_on_commit_callbacks):
    first = services.active_revision()
    run = start(BatchRun.Kind.REANALYSIS, first)
    services.revision_activate(revision=thermal_draft(), message="meanwhile")

    finished = batches.batch_execute(run_id=run.pk)

    assert finished.done == 0
    assert "was activated meanwhile" in finished.stopped_reason


# Moving rule sets between installations ----------------------------------------------------------


def test_export_then_import_gives_the_same_rules_and_digest(tmp_path):
    draft = thermal_draft()
    services.revision_activate(revision=draft, message="thermal")
    exported = tmp_path / "default.yaml"
    call_command("rules", "export", str(exported))
    assert exported.read_text() == draft.text

    call_command("rules", "import", str(exported), "--ruleset", "default", "--message", "again")
    imported = RuleSetRevision.objects.get(number=3)
    assert (imported.digest, imported.active, imported.parent) == (draft.digest, False, draft)

    call_command("rules", "import", str(exported), "--ruleset", "gpu-team", "--activate")
    assert selectors.revision_active("gpu-team").number == 1


def test_import_refuses_rules_that_do_not_load(tmp_path):
    broken = tmp_path / "broken.yaml"
    broken.write_text("rules:\n  - id: Bad Id\n")
    result = subprocess.run(
        [sys.executable, "manage.py", "rules", "import", str(broken), "--ruleset", "x"],
        cwd=BASE_DIR, capture_output=True, text=True, env=_env(),
    )  # fmt: skip

    assert result.returncode == 2
    assert "broken.yaml" in result.stderr
    assert "x.yaml:2: rule" in result.stderr


def _env():
    import os

    from django.db import connection

    db = connection.settings_dict
    return {**os.environ, "DATABASE_URL": f"postgres://{db['USER']}@{db['HOST']}:{db['PORT'] or 5432}/{db['NAME']}"}


def test_the_workbench_takes_its_tables_rows_and_permissions_from_the_rules_app(migrator_of, person):
    from django.contrib.auth.models import Permission

    old = migrator_of(("workbench", None), app="rules")
    revision = old.RuleSetRevision.objects.create(
        ruleset=old.RuleSet.objects.create(name="lab"), number=1, text="rules: []\n", digest="sha256:x"
    )
    run = old.BatchRun.objects.create(kind="backtest", revision=revision, limit=5, time_limit=60)

    new = migrator_of(("rules", "0003_workbench_moved"), app="workbench")

    assert new.BatchRun.objects.get(pk=run.pk).limit == 5
    assert new.BatchRun._meta.db_table == "workbench_batchrun"
    assert Permission.objects.filter(content_type__app_label="workbench", codename="add_batchrun").exists()
    assert not Permission.objects.filter(content_type__app_label="rules", codename="add_batchrun").exists()


def test_a_reanalysis_from_the_page_asks_for_confirmation_with_the_count(stored, client_for, person):
    review(stored["quiet"], person(TRIAGER, "tess"), "insufficient_evidence")
    client = client_for(RULE_EDITOR)

    asked = client.post(reverse("workbench:reanalyse"), {"outcome": "unattributed"})

    html = asked.content.decode()
    assert asked.status_code == 200
    assert "Reanalyse 2 attempts?" in html
    assert "1 of them\n    was reviewed" in html
    assert '<input type="hidden" name="outcome" value="unattributed">' in html
    assert not BatchRun.objects.exists()

    started = client.post(reverse("workbench:reanalyse"), {"outcome": "unattributed", "confirmed": "yes"})

    run = BatchRun.objects.get()
    assert started.status_code == 302
    assert (run.kind, run.filters) == ("reanalysis", {"outcome": "unattributed"})


def test_a_run_whose_message_was_lost_is_enqueued_again_and_runs_once(
    stored, settings, django_capture_on_commit_callbacks
):
    from datetime import timedelta

    from django.utils import timezone

    lost = start(BatchRun.Kind.BACKTEST, services.active_revision())  # its message never reaches a worker
    recent = start(BatchRun.Kind.BACKTEST, services.active_revision())
    BatchRun.objects.filter(pk=lost.pk).update(
        created=timezone.now() - timedelta(seconds=settings.FAULTLINE_REQUEUE_AFTER + 1)
    )

    with django_capture_on_commit_callbacks(execute=True):
        assert batches.batches_reap_lost() == [lost.pk]

    lost.refresh_from_db()
    assert (lost.state, lost.done, lost.total) == ("done", 3, 3)
    assert batches.batch_execute(run_id=lost.pk).done == 3  # its first message, late: nothing runs again
    recent.refresh_from_db()
    assert recent.state == "queued"


def test_a_run_whose_worker_was_lost_fails_with_the_reason_and_never_stays_running(stored, settings):
    from datetime import timedelta

    from django.utils import timezone

    run = start(BatchRun.Kind.REANALYSIS, services.active_revision())
    alive = start(BatchRun.Kind.REANALYSIS, services.active_revision())
    long_ago = timezone.now() - timedelta(
        seconds=settings.FAULTLINE_BATCH_TIME_LIMIT + settings.FAULTLINE_STUCK_AFTER + 1
    )
    BatchRun.objects.filter(pk=run.pk).update(state="running", started=long_ago, total=3, done=1)
    BatchRun.objects.filter(pk=alive.pk).update(state="running", started=timezone.now(), total=3, done=1)

    assert batches.batches_reap_lost() == []

    run.refresh_from_db()
    assert (run.state, run.stopped_reason) == (
        "failed",
        "lost: the worker running it stopped after 1 attempt; start it again",
    )
    assert run.finished is not None
    alive.refresh_from_db()
    assert alive.state == "running"
