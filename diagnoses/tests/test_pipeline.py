"""The Blueprint's tasks, run with ``.apply()``: idempotent analysis, failures kept visible, retries, the reaper."""

import re
from datetime import timedelta

import pytest
from django.db import IntegrityError, connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from connectors.base import ConnectorError
from diagnoses import bundle_store, selectors
from diagnoses.models import Attempt, Cluster, Diagnosis, Evidence, NodeEvent
from diagnoses.services import analysis, attempts, discovery, gathering, verdict_days
from diagnoses.tasks import analyse_attempt, reap_stuck_attempts
from rules import services as rule_services
from rules.selectors import revision_engine
from rules.services import active_revision

pytestmark = pytest.mark.django_db


@pytest.fixture
def retries_run_in_process(monkeypatch):
    """Eager retries are applied in-process; a propagated Retry would stop them."""
    monkeypatch.setitem(analyse_attempt.app.conf, "task_eager_propagates", False)


@pytest.fixture
def attempt(make_bundle):
    return attempts.attempt_ingest_directory(path=make_bundle(), analyse=False)


@pytest.fixture
def discovered(tmp_path, make_bundle, folder_cluster) -> Attempt:
    """An attempt found in a watched folder, not gathered yet."""
    make_bundle(root=tmp_path / "drop")
    cluster = folder_cluster(tmp_path / "drop")
    discovery.cluster_poll(cluster_id=cluster.pk)  # its analysis is queued on commit, never run here
    return Attempt.objects.select_related("cluster").get()


def test_analysis_records_the_diagnosis_its_evidence_and_node_events(attempt):
    analyse_attempt.apply(args=[attempt.pk])

    attempt.refresh_from_db()
    diagnosis = attempt.current_diagnosis
    assert attempt.analysis_state == "analysed"
    assert attempt.analysis_runs == 1
    assert (diagnosis.outcome, diagnosis.domain, diagnosis.subdomain) == ("attributed", "hardware", "gpu.bus")
    assert diagnosis.root_cause_rule == "gpu.xid.fallen_off_bus"
    assert list(diagnosis.root_cause_nodes.values_list("name", flat=True)) == ["node02"]
    assert diagnosis.revision == active_revision()
    assert diagnosis.document["ruleset"] == {
        "name": "default",
        "version": str(diagnosis.revision.number),
        "digest": diagnosis.revision.digest,
    }
    root = Evidence.objects.get(diagnosis=diagnosis, role="root_cause")
    assert (root.node.name, root.ref, root.rule) == ("node02", "logs/node02/syslog.log:3", "gpu.xid.fallen_off_bus")
    assert [e["ref"] for e in diagnosis.document["evidence"]] == list(
        Evidence.objects.filter(diagnosis=diagnosis).values_list("ref", flat=True)
    )
    events = NodeEvent.objects.filter(diagnosis=diagnosis)
    assert events.filter(role="root_cause", node__name="node02").count() == 1
    assert events.filter(role="cascade").count() == 8
    assert set(events.filter(role="cascade").values_list("node__name", flat=True)) == {
        "node01",
        "node02",
        "node03",
        "node04",
    }


def test_analysing_twice_with_the_same_revision_keeps_one_diagnosis(attempt):
    analyse_attempt.apply(args=[attempt.pk])
    first = Diagnosis.objects.get(attempt=attempt)

    analyse_attempt.apply(args=[attempt.pk])

    assert list(Diagnosis.objects.filter(attempt=attempt)) == [first]
    attempt.refresh_from_db()
    assert attempt.analysis_runs == 1  # the second run saw the work done and returned early


def test_recording_a_diagnosis_twice_keeps_the_first(attempt):
    revision = active_revision()
    with selectors.attempt_context(attempt) as context:
        result = revision_engine(revision).analyse(context)
    first = analysis.diagnosis_record(attempt=attempt, revision=revision, analysis=result)

    again = analysis.diagnosis_record(attempt=attempt, revision=revision, analysis=result)

    assert again == first
    assert Diagnosis.objects.count() == 1
    assert Evidence.objects.count() == len(result.diagnosis["evidence"])


def test_the_database_refuses_a_second_diagnosis_for_the_same_revision(attempt):
    analyse_attempt.apply(args=[attempt.pk])
    diagnosis = Diagnosis.objects.get()

    with pytest.raises(IntegrityError):
        Diagnosis.objects.create(
            attempt=attempt, revision=diagnosis.revision, outcome="unattributed", document_json="{}"
        )


def test_a_permanent_connector_error_fails_the_attempt_with_the_reason(discovered):
    Cluster.objects.filter(pk=discovered.cluster_id).update(connector="nowhere")

    analyse_attempt.apply(args=[discovered.pk])

    discovered.refresh_from_db()
    assert discovered.analysis_state == "failed"
    assert discovered.analysis_error == (
        "gathering the context failed: 'nowhere' is not a scheduler connector here (choose slurm, kueue, folder, demo)"
    )
    assert (discovered.gathered, Diagnosis.objects.exists()) == (None, False)


def test_a_missing_bundle_fails_the_attempt_and_reanalysis_retries_it(attempt, django_capture_on_commit_callbacks):
    stored = bundle_store.path_of(attempt.bundle)
    stored.rename(stored.with_name("moved"))

    analyse_attempt.apply(args=[attempt.pk])

    attempt.refresh_from_db()
    assert attempt.analysis_state == "failed"
    assert "not a directory" in attempt.analysis_error

    stored.with_name("moved").rename(stored)
    with django_capture_on_commit_callbacks(execute=True):
        attempts.attempt_reanalyse(attempt=attempt)

    attempt.refresh_from_db()
    assert (attempt.analysis_state, attempt.analysis_error) == ("analysed", "")
    assert attempt.current_diagnosis.subdomain == "gpu.bus"


def test_an_engine_failure_fails_the_attempt_with_the_reason(attempt, monkeypatch):
    def broken(revision):
        raise MemoryError("out of memory while scanning")

    monkeypatch.setattr(analysis, "revision_engine", broken)

    analyse_attempt.apply(args=[attempt.pk])

    attempt.refresh_from_db()
    assert attempt.analysis_state == "failed"
    assert attempt.analysis_error == "the analysis failed: MemoryError: out of memory while scanning"


@pytest.mark.usefixtures("retries_run_in_process")
def test_transient_connector_errors_are_retried_then_succeed(discovered, monkeypatch):
    calls = []

    def flaky(*, attempt):
        calls.append(attempt.pk)
        if len(calls) < 3:
            raise ConnectorError("Loki answered 503")
        gather(attempt=attempt)

    gather = analysis.attempt_gather
    monkeypatch.setattr(analysis, "attempt_gather", flaky)

    analyse_attempt.apply(args=[discovered.pk])  # eager retries run at once, in-process

    discovered.refresh_from_db()
    assert len(calls) == 3
    assert discovered.analysis_state == "analysed"


@pytest.mark.usefixtures("retries_run_in_process")
def test_transient_errors_fail_the_attempt_after_the_last_retry(discovered, monkeypatch, settings):
    settings.FAULTLINE_GATHER_RETRIES = 2
    calls = []

    def down(*, attempt):
        calls.append(attempt.pk)
        raise ConnectorError("connection refused")

    monkeypatch.setattr(analysis, "attempt_gather", down)

    analyse_attempt.apply(args=[discovered.pk])

    discovered.refresh_from_db()
    assert len(calls) == 3
    assert (discovered.analysis_state, discovered.analysis_error) == (
        "failed",
        "gathering the context failed: connection refused",
    )


def test_a_deleted_attempt_is_no_error(attempt):
    attempt_id = attempt.pk
    attempt.delete()

    assert analyse_attempt.apply(args=[attempt_id]).successful()


def test_the_reaper_requeues_attempts_whose_worker_was_lost(attempt, settings, django_capture_on_commit_callbacks):
    lost = timezone.now() - timedelta(seconds=settings.FAULTLINE_STUCK_AFTER + 1)
    Attempt.objects.filter(pk=attempt.pk).update(analysis_state="analysing", analysis_started=lost, analysis_runs=1)

    with django_capture_on_commit_callbacks(execute=True):
        requeued = reap_stuck_attempts.apply().get()

    assert requeued == [attempt.pk]
    attempt.refresh_from_db()
    assert attempt.analysis_state == "analysed"
    assert attempt.analysis_runs == 2


def test_the_reaper_leaves_recent_analyses_alone(attempt):
    Attempt.objects.filter(pk=attempt.pk).update(analysis_state="analysing", analysis_started=timezone.now())

    assert reap_stuck_attempts.apply().get() == []


def test_the_reaper_fails_an_attempt_that_keeps_losing_its_worker(attempt, settings):
    lost = timezone.now() - timedelta(seconds=settings.FAULTLINE_STUCK_AFTER + 1)
    runs = settings.FAULTLINE_MAX_ANALYSIS_RUNS
    Attempt.objects.filter(pk=attempt.pk).update(analysis_state="analysing", analysis_started=lost, analysis_runs=runs)

    assert reap_stuck_attempts.apply().get() == []

    attempt.refresh_from_db()
    assert attempt.analysis_state == "failed"
    assert attempt.analysis_error == f"the analysis did not finish in {runs} runs (worker lost or killed)"


def test_an_unexpected_gathering_error_fails_the_attempt_with_the_reason(discovered, monkeypatch):
    def broken(*, attempt):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(analysis, "attempt_gather", broken)

    analyse_attempt.apply(args=[discovered.pk])

    discovered.refresh_from_db()
    assert (discovered.analysis_state, discovered.analysis_error) == (
        "failed",
        "gathering the context failed: PermissionError: [Errno 13] Permission denied",
    )


def test_an_attempt_whose_analysis_failed_is_gathered_again_into_a_new_bundle(
    discovered, monkeypatch, django_capture_on_commit_callbacks
):
    def broken(revision):
        raise MemoryError("out of memory while scanning")

    with monkeypatch.context() as patched:
        patched.setattr(analysis, "revision_engine", broken)
        analyse_attempt.apply(args=[discovered.pk])
    discovered.refresh_from_db()
    first = bundle_store.path_of(discovered.bundle)
    assert (discovered.analysis_state, first.is_dir(), discovered.gathered is not None) == ("failed", True, True)

    with django_capture_on_commit_callbacks(execute=True):
        gathering.attempt_gather_again(attempt=discovered)

    discovered.refresh_from_db()
    assert (discovered.analysis_state, discovered.current_diagnosis.subdomain) == ("analysed", "gpu.bus")
    assert bundle_store.path_of(discovered.bundle).is_dir()
    assert not first.exists()
    with pytest.raises(gathering.GatherRefused, match="has a diagnosis"):
        gathering.attempt_gather_again(attempt=discovered)


def test_an_uploaded_attempt_has_nothing_to_gather_again(attempt):
    with pytest.raises(gathering.GatherRefused, match="came as a bundle"):
        gathering.attempt_gather_again(attempt=attempt)


def test_a_queued_analysis_is_claimed_once_however_many_messages_arrive(attempt):
    for _ in range(3):  # the first message, a redelivery, the reaper's
        analyse_attempt.apply(args=[attempt.pk])

    attempt.refresh_from_db()
    assert (attempt.analysis_state, attempt.analysis_runs) == ("analysed", 1)
    assert attempt.diagnoses.count() == 1


def test_a_message_for_an_attempt_being_analysed_runs_nothing(attempt):
    Attempt.objects.filter(pk=attempt.pk).update(analysis_state="analysing", analysis_started=timezone.now())

    analyse_attempt.apply(args=[attempt.pk])

    attempt.refresh_from_db()
    assert (attempt.analysis_state, attempt.analysis_runs, attempt.diagnoses.count()) == ("analysing", 0, 0)


def test_the_reaper_requeues_attempts_queued_too_long_with_no_analysis_in_flight(
    attempt, make_bundle, settings, django_capture_on_commit_callbacks
):
    recent = attempts.attempt_ingest_directory(path=make_bundle(job_id="2"), analyse=False)
    Attempt.objects.filter(pk=recent.pk).update(analysis_state="queued")
    long_ago = timezone.now() - timedelta(seconds=settings.FAULTLINE_REQUEUE_AFTER + 1)
    Attempt.objects.filter(pk=attempt.pk).update(
        analysis_state="queued", state_changed=long_ago
    )  # its message was lost with the broker

    with django_capture_on_commit_callbacks(execute=True):
        requeued = reap_stuck_attempts.apply().get()

    assert requeued == [attempt.pk]
    attempt.refresh_from_db()
    assert (attempt.analysis_state, attempt.analysis_runs) == ("analysed", 1)
    recent.refresh_from_db()
    assert recent.analysis_state == "queued"


def test_the_reaper_leaves_a_discovered_attempt_waiting_for_its_gather_delay(discovered, settings):
    long_ago = timezone.now() - timedelta(seconds=settings.FAULTLINE_REQUEUE_AFTER + 1)
    Cluster.objects.filter(pk=discovered.cluster_id).update(gather_delay=10**6)
    Attempt.objects.filter(pk=discovered.pk).update(state_changed=long_ago, end=timezone.now())

    assert reap_stuck_attempts.apply().get() == []

    Cluster.objects.filter(pk=discovered.cluster_id).update(gather_delay=0)
    Attempt.objects.filter(pk=discovered.pk).update(end=long_ago)
    assert reap_stuck_attempts.apply().get() == [discovered.pk]


@pytest.mark.usefixtures("retries_run_in_process")
def test_transient_errors_stop_after_the_gathering_retries_whoever_sent_the_message(discovered, monkeypatch, settings):
    settings.FAULTLINE_GATHER_RETRIES = 2
    Attempt.objects.filter(pk=discovered.pk).update(analysis_runs=2)  # two tries already, from earlier messages
    calls = []

    def down(*, attempt):
        calls.append(attempt.pk)
        raise ConnectorError("connection refused")

    monkeypatch.setattr(analysis, "attempt_gather", down)

    analyse_attempt.apply(args=[discovered.pk])  # a fresh message (retries 0), e.g. the reaper's

    discovered.refresh_from_db()
    assert len(calls) == 1
    assert (discovered.analysis_state, discovered.analysis_runs) == ("failed", 3)


def statements(captured) -> list[str]:
    """Each statement captured as its verb and its table (``SELECT diagnoses_attempt``; a subquery's table, aliased
    ``U0``, left out)."""
    named = []
    for query in captured:
        verb = query["sql"].split(None, 1)[0]
        table = re.search(r'(?:FROM|INTO|UPDATE)\s+"?(\w+)\b(?!"?\s+U\d)', query["sql"])
        named.append(f"{verb} {table[1]}" if verb in ("SELECT", "INSERT", "UPDATE", "DELETE") and table else verb)
    return named


RECORDING = [
    "INSERT diagnoses_diagnosis",
    "SELECT diagnoses_node",  # the nodes it names (the attempt's, stored at ingest)
    "INSERT diagnoses_diagnosis_root_cause_nodes",
    "INSERT diagnoses_evidence",  # then the node events, in one COPY (which Django's query log does not see)
    "SELECT diagnoses_attempt",  # the verdict of record: the row locked, with its current diagnosis's time
    "UPDATE diagnoses_attempt",  # analysed, current diagnosis and verdict in one update
]


def test_an_analysis_reads_once_and_records_in_one_transaction(attempt, django_capture_on_commit_callbacks):
    """What one analysis costs the database (docs/performance.md, "Pipeline"): the active revision, the attempt with
    any diagnosis of that revision, the claim, then one transaction that records the diagnosis and the verdict of
    record from what it has in hand, moves the rollups and notes the hand-offs (queued once it commits)."""
    revision_engine(active_revision())  # the rule set stored and compiled: once per database and process
    with CaptureQueriesContext(connection) as captured, django_capture_on_commit_callbacks() as queued:
        diagnosis = analysis.attempt_analyse(attempt_id=attempt.pk)
    assert statements(captured) == [
        "SELECT rules_rulesetrevision",
        "SELECT diagnoses_attempt",  # with the id of a diagnosis of this revision, if any
        "UPDATE diagnoses_attempt",  # the claim
        "SAVEPOINT",  # the recording's transaction (BEGIN outside a test's own transaction)
        *RECORDING,
        "INSERT diagnoses_attempt_verdict_nodes",  # no verdict before: no links to read
        "INSERT diagnoses_verdictday",
        "INSERT diagnoses_verdictnodeday",
        "SAVEPOINT",  # the template store (docs/leads.md), in its own savepoint: attributed, so no leads
        "INSERT diagnoses_template",
        "RELEASE",
        "SAVEPOINT",  # the hand-offs' note (a receiver of diagnosis_recorded), in its own savepoint
        "INSERT handoffs_pendinghandoff",
        "RELEASE",
        "INSERT diagnoses_eventcount",  # the analysis, the first diagnosis and its time counted, in one statement
        "RELEASE",  # COMMIT outside a test's own transaction
    ]
    assert len(queued) == 1  # the hand-offs' message
    attempt.refresh_from_db()
    assert (attempt.analysis_state, attempt.current_diagnosis, attempt.verdict_source) == (
        "analysed",
        diagnosis,
        "engine",
    )
    assert list(attempt.verdict_nodes.values_list("name", flat=True)) == ["node02"]
    assert verdict_days.verdict_days_stored() == verdict_days.verdict_days_counted()
    assert verdict_days.verdict_node_days_stored() == verdict_days.verdict_node_days_counted()


def test_a_re_analysis_reads_the_verdict_it_replaces(attempt, django_capture_on_commit_callbacks):
    first = analysis.attempt_analyse(attempt_id=attempt.pk)
    draft = rule_services.revision_create(ruleset=first.revision.ruleset, text=first.revision.text + "\n")
    rule_services.revision_activate(revision=draft)
    revision_engine(active_revision())
    with CaptureQueriesContext(connection) as captured, django_capture_on_commit_callbacks() as queued:
        diagnosis = analysis.attempt_analyse(attempt_id=attempt.pk)
    assert statements(captured) == [
        "SELECT rules_rulesetrevision",
        "SELECT diagnoses_attempt",
        "UPDATE diagnoses_attempt",
        "SAVEPOINT",
        *RECORDING,
        "SELECT diagnoses_attempt_verdict_nodes",  # the verdict's nodes before: unchanged, nothing to write
        "SAVEPOINT",  # the template store: the templates there, not counted again; any leads before retired
        "INSERT diagnoses_template",
        "SELECT diagnoses_leadset",
        "RELEASE",
        "INSERT diagnoses_eventcount",  # the analysis counted; the verdict did not move, so no rollup row moves
        "RELEASE",  # a re-analysis hands nothing off
    ]
    assert queued == []
    attempt.refresh_from_db()
    assert (attempt.current_diagnosis, diagnosis.revision) == (diagnosis, draft)
    assert verdict_days.verdict_days_stored() == verdict_days.verdict_days_counted()
    assert verdict_days.verdict_node_days_stored() == verdict_days.verdict_node_days_counted()
    assert analysis.attempt_analyse(attempt_id=attempt.pk) == diagnosis  # done: recorded once
    assert Diagnosis.objects.filter(attempt=attempt).count() == 2


def test_node_events_are_stored_as_bulk_create_stores_them_elsewhere(attempt, monkeypatch):
    """PostgreSQL takes the node events in a COPY; the other databases (``make run``'s SQLite) through
    ``bulk_create``: the same rows."""

    def stored(diagnosis):
        rows = NodeEvent.objects.filter(diagnosis=diagnosis).order_by("pk")
        return [row[1:] for row in rows.values_list(*analysis.EVENT_COLUMNS)]  # all but the diagnosis

    copied = stored(analysis.attempt_analyse(attempt_id=attempt.pk))
    Diagnosis.objects.all().delete()
    monkeypatch.setattr(connection, "vendor", "sqlite")
    created = stored(analysis.attempt_analyse(attempt_id=attempt.pk))
    assert copied == created
    assert len(copied) == 9
    assert {(approx, low is None) for _, _, approx, low, *_ in copied} == {(False, True), (True, False)}  # both kinds
