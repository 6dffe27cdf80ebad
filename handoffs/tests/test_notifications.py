"""Notifications: rules match new diagnoses (announced by the store after commit), events group into incidents, one
message per incident arrives at a real local endpoint with the documented body, a failed delivery is tried again and
logged, and a failing endpoint or broker never fails an analysis."""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta

import pytest
from django.core import mail
from django.core.exceptions import ValidationError
from django.db import connection
from django.db.models import F
from django.utils import timezone

from access.roles import TRIAGER
from diagnoses.models import Attempt, Review
from diagnoses.services import reviews
from diagnoses.signals import diagnosis_recorded
from handoffs import selectors, tasks
from handoffs.models import Delivery, Incident, NotificationRule, PendingHandoff
from handoffs.services import notifications, outbox

URL_VARIABLE = "FAULTLINE_TEST_WEBHOOK_URL"


@pytest.fixture(autouse=True)
def eager_retries(monkeypatch):
    """A task applied in-process retries in-process as a worker would (Celery re-raises the retry instead while
    ``task_eager_propagates`` is on)."""
    monkeypatch.setitem(tasks.deliver_incident.app.conf, "task_eager_propagates", False)


@pytest.fixture
def receiver(webhook_receiver, monkeypatch):
    """The local endpoint, its URL in the variable the rules name."""
    monkeypatch.setenv(URL_VARIABLE, f"{webhook_receiver.url}/hooks/faultline")
    return webhook_receiver


def bodies(receiver) -> list[dict]:
    assert all(r.method == "POST" and r.path == "/hooks/faultline" for r in receiver.requests)
    return [request.json() for request in receiver.requests]


@pytest.fixture
def analysed(make_bundle, store, django_capture_on_commit_callbacks):
    """``analysed(job_id, attempt=0, **fields)``: an attempt (GPU off the bus on node02 unless told) ingested and
    analysed, its announcement run (what a commit would run): the hand-offs' task, in-process."""
    start = datetime.now(UTC).replace(microsecond=0) - timedelta(hours=2)

    def analyse(job_id: str, attempt: int = 0, **fields) -> Attempt:
        with django_capture_on_commit_callbacks(execute=True):
            return store(make_bundle(job_id=job_id, attempt=attempt, start=start, **fields))

    return analyse


def rule(**fields) -> NotificationRule:
    values = {"name": "gpu faults", "channel": "webhook", "url_env": URL_VARIABLE, "group_seconds": 60,
              "quiet_seconds": 3600, **fields}  # fmt: skip
    return notifications.rule_save(**values)


def send_due(django_capture_on_commit_callbacks, *, after: float) -> list[int]:
    """What beat's tick does ``after`` seconds from now: queue the due messages, then what a worker does with each
    queued delivery (retries included), here in-process."""
    with django_capture_on_commit_callbacks() as queued:
        due = notifications.incidents_queue_due(now=timezone.now() + timedelta(seconds=after))
    assert len(queued) == len(due)
    for pk in due:
        tasks.deliver_incident.apply(args=[pk])
    return due


def test_one_message_per_grouped_incident_with_the_documented_body(
    receiver, analysed, django_capture_on_commit_callbacks
):
    rule(subdomains=["gpu.bus"], group_by="job")
    first = analysed("512", attempt=0)  # one job on many nodes, requeued twice: one incident
    analysed("512", attempt=1)
    analysed("512", attempt=2)
    analysed("513")
    analysed("514", faulty=None)  # unattributed: the rule does not match

    assert send_due(django_capture_on_commit_callbacks, after=30) == []  # the grouping window is still open
    assert bodies(receiver) == []
    assert len(send_due(django_capture_on_commit_callbacks, after=61)) == 2
    assert len(bodies(receiver)) == 2
    body = next(b for b in bodies(receiver) if b["incident"]["key"] == "dgx-a/512")
    assert set(body) == {
        "version", "idempotency_key", "rule", "trigger", "summary", "incident", "items", "items_omitted"
    }  # fmt: skip
    assert body["version"] == 1
    assert body["incident"]["version"] == 3
    assert body["idempotency_key"] == f"faultline-incident-{body['incident']['id']}-v3"
    assert body["rule"] == "gpu faults"
    assert body["trigger"] == "diagnosis"
    assert body["incident"]["events"] == 3
    assert body["incident"]["url"].endswith(f"/notifications/#incident-{body['incident']['id']}")
    assert body["summary"] == "Faultline: job 512 on dgx-a: attributed, hardware / gpu.bus on node02 (+2 more events)"
    assert body["items_omitted"] == 0
    assert [item["attempt"] for item in body["items"]] == [0, 1, 2]
    item = body["items"][0]
    assert item == {
        "kind": "diagnosis", "cluster": "dgx-a", "job_id": "512", "attempt": 0, "attempt_id": first.pk,
        "state": first.state, "outcome": "attributed", "domain": "hardware", "subdomain": "gpu.bus",
        "root_cause_nodes": ["node02"], "text": "job 512 on dgx-a: attributed, hardware / gpu.bus on node02",
        "url": f"http://localhost:8000/attempts/{first.pk}/",
    }  # fmt: skip
    assert Delivery.objects.filter(ok=True).count() == 2

    analysed("512", attempt=3)  # within the quiet period: joins the incident already sent, sends nothing
    assert send_due(django_capture_on_commit_callbacks, after=120) == []
    assert len(bodies(receiver)) == 2
    assert Incident.objects.get(key="dgx-a/512").events == 4


def test_grouping_by_root_cause_makes_one_message_of_many_jobs(receiver, analysed, django_capture_on_commit_callbacks):
    rule(group_by="root_cause", outcomes=["attributed"], clusters=["dgx-a"])
    for job in range(20, 26):
        analysed(str(job))
    send_due(django_capture_on_commit_callbacks, after=61)
    assert len(bodies(receiver)) == 1
    assert bodies(receiver)[0]["incident"]["key"] == "dgx-a/hardware/gpu.bus"
    assert bodies(receiver)[0]["incident"]["events"] == 6


def test_a_failed_delivery_is_tried_again_and_logged(receiver, analysed, django_capture_on_commit_callbacks):
    rule()
    analysed("600")
    receiver.statuses.extend([503, 500])  # the endpoint fails twice, then answers
    send_due(django_capture_on_commit_callbacks, after=61)

    assert len(bodies(receiver)) == 3
    assert bodies(receiver)[0] == bodies(receiver)[2]
    incident = Incident.objects.get()
    assert incident.state == Incident.State.SENT
    log = list(incident.deliveries.order_by("number").values_list("number", "ok", "answer"))
    assert log == [(1, False, "HTTP 503 unavailable"), (2, False, "HTTP 500 unavailable"), (3, True, "HTTP 200 ok")]


def test_a_delivery_whose_answer_was_lost_arrives_twice_with_one_idempotency_key(
    receiver, analysed, settings, django_capture_on_commit_callbacks
):
    """Finding 4: the endpoint takes the first try but answers after the timeout; the try is made again (deliveries
    are at-least-once) and both carry the same key, in the header and the body, for the receiver to deduplicate."""
    settings.FAULTLINE_NOTIFICATION_TIMEOUT = 1
    rule()
    analysed("601")
    receiver.delays.append(2.5)  # the first answer comes after the sender gave up on it
    send_due(django_capture_on_commit_callbacks, after=61)

    assert len(receiver.requests) == 2
    keys = {request.headers["Idempotency-Key"] for request in receiver.requests}
    assert keys == {body["idempotency_key"] for body in bodies(receiver)}
    assert keys == {f"faultline-incident-{Incident.objects.get().pk}-v1"}
    log = list(Incident.objects.get().deliveries.order_by("number").values_list("ok", "answer"))
    assert log == [(False, "request failed: ReadTimeout"), (True, "HTTP 200 ok")]


def test_a_delivery_gives_up_after_the_retries_or_at_once_on_a_permanent_error(receiver, analysed, settings):
    settings.FAULTLINE_NOTIFICATION_RETRIES = 2
    rule()
    analysed("601")
    incident = Incident.objects.get()
    receiver.statuses.extend([503, 503, 503])
    tasks.deliver_incident.apply(args=[incident.pk])
    incident.refresh_from_db()
    assert incident.state == Incident.State.FAILED
    assert incident.deliveries.count() == 3  # the first try and two retries

    incident.state = Incident.State.QUEUED
    incident.save()
    receiver.statuses.extend([404])
    tasks.deliver_incident.apply(args=[incident.pk])
    incident.refresh_from_db()
    assert incident.state == Incident.State.FAILED
    assert incident.deliveries.count() == 4


def test_slack_and_email_channels(receiver, analysed, django_capture_on_commit_callbacks):
    rule(name="slack", channel="slack")
    rule(name="mail", channel="email", url_env="", recipients=["oncall@example.org"])
    analysed("700")
    send_due(django_capture_on_commit_callbacks, after=61)
    assert len(bodies(receiver)) == 1
    assert set(bodies(receiver)[0]) == {"text", "idempotency_key"}
    assert bodies(receiver)[0]["idempotency_key"] == receiver.requests[0].headers["Idempotency-Key"]
    assert bodies(receiver)[0]["text"].startswith("Faultline: job 700 on dgx-a: attributed, hardware / gpu.bus")
    assert len(mail.outbox) == 1
    assert mail.outbox[0].to == ["oncall@example.org"]
    assert "job 700" in mail.outbox[0].subject
    assert "/attempts/" in mail.outbox[0].body
    key = mail.outbox[0].extra_headers["Idempotency-Key"]
    assert key.startswith("faultline-incident-")
    assert mail.outbox[0].body.endswith(f"Idempotency key: {key}")


def test_a_node_becoming_a_repeat_offender_and_the_backlog(receiver, analysed, django_capture_on_commit_callbacks):
    rule(name="offenders", trigger="repeat_offender", group_by="cluster")
    rule(name="backlog", trigger="backlog", backlog_threshold=1)
    analysed("800")
    analysed("801")
    assert not Incident.objects.filter(rule__name="offenders").exists()  # twice is not yet a repeat offender
    analysed("802")
    analysed("803", faulty=None)
    analysed("804", faulty=None)
    with django_capture_on_commit_callbacks(execute=True):
        tasks.send_due_notifications.apply()  # beat's tick: the backlog of 2 is past 1; nothing due yet
    send_due(django_capture_on_commit_callbacks, after=61)
    by_rule = {body["rule"]: body for body in bodies(receiver)}
    assert by_rule["offenders"]["items"][0]["node"] == "node02"
    assert by_rule["offenders"]["items"][0]["root_causes"] == 3
    assert by_rule["backlog"]["items"][0]["backlog"] == 2


def test_the_backlog_and_repeat_offenders_follow_the_verdict_of_record(analysed, person):
    """As the triage queue and the node page count them: a review takes an attempt out of the backlog, and a correction
    that names another node takes its attempt from the first node's count."""
    reviewer = person(TRIAGER)
    waiting = analysed("810", faulty=None)
    assert selectors.triage_backlog_by_cluster() == {"dgx-a": 1}
    reviews.review_create(diagnosis=waiting.current_diagnosis, reviewer=reviewer, verdict=Review.Verdict.CONFIRMED)
    assert selectors.triage_backlog_by_cluster() == {}

    attempts = [analysed(str(job)) for job in (811, 812, 813)]
    [(node, count)] = selectors.diagnosis_repeat_offenders(attempts[-1].current_diagnosis)
    assert (node.name, count) == ("node02", 3)
    reviews.review_create(
        diagnosis=attempts[0].current_diagnosis, reviewer=reviewer, verdict=Review.Verdict.CORRECTED,
        corrected_outcome="attributed", corrected_domain="hardware", corrected_subdomain="gpu.bus",
        corrected_nodes=["node01"],
    )  # fmt: skip
    assert selectors.diagnosis_repeat_offenders(attempts[-1].current_diagnosis) == []


def test_the_webhook_url_is_a_secret_by_reference(monkeypatch, tmp_path, db):
    with pytest.raises(ValidationError, match="which is not set"):
        rule(url_env="FAULTLINE_TEST_UNSET_VARIABLE")
    with pytest.raises(ValidationError, match="exactly one"):
        rule(url_env="", url_file="")
    secret = tmp_path / "webhook"
    secret.write_text("https://hooks.example.org/services/T000/B000/XXXX\n")
    saved = rule(url_env="", url_file=str(secret))
    assert "XXXX" not in str(NotificationRule.objects.filter(pk=saved.pk).values().get())


def test_a_failing_hand_off_never_fails_an_analysis(analysed, monkeypatch, receiver):
    rule()

    def broker_down(*args, **kwargs):
        raise ConnectionError("the broker is down")

    monkeypatch.setattr(tasks.diagnosis_handoffs, "delay", broker_down)
    attempt = analysed("900")
    assert attempt.analysis_state == Attempt.Analysis.ANALYSED
    assert attempt.current_diagnosis is not None
    assert not Incident.objects.exists()
    assert PendingHandoff.objects.filter(diagnosis=attempt.current_diagnosis).exists()  # noted: not lost


def test_a_note_that_cannot_be_written_never_fails_an_analysis(analysed, monkeypatch, caplog):
    """The note is written in the recording's transaction, in a savepoint: a database error there is logged and
    rolled back alone."""

    def failing(**kwargs):
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1 / 0")  # a real error of the database, inside the recording's transaction

    monkeypatch.setattr(outbox, "handoff_note", failing)
    attempt = analysed("904")
    assert attempt.analysis_state == Attempt.Analysis.ANALYSED
    assert attempt.current_diagnosis is not None
    assert attempt.verdict_source == "engine"
    assert not PendingHandoff.objects.exists()
    assert "a receiver of diagnosis_recorded" in caplog.text
    assert "division by zero" in caplog.text


def minutes_pass(minutes: int) -> None:
    PendingHandoff.objects.update(noted=F("noted") - timedelta(minutes=minutes))


def test_hand_offs_whose_message_was_lost_are_queued_again(
    analysed, monkeypatch, receiver, django_capture_on_commit_callbacks
):
    rule()
    with monkeypatch.context() as patch:
        patch.setattr(tasks.diagnosis_handoffs, "delay", lambda *args: None)  # accepted, then lost by the broker
        attempt = analysed("901")
    tasks.send_due_notifications.apply()
    assert not Incident.objects.exists()  # a minute later: perhaps only slow, not queued again
    minutes_pass(3)
    with django_capture_on_commit_callbacks(execute=True):
        tasks.send_due_notifications.apply()
    assert Incident.objects.get().items[0]["attempt_id"] == attempt.pk
    assert not PendingHandoff.objects.exists()
    assert len(send_due(django_capture_on_commit_callbacks, after=61)) == 1
    assert [body["incident"]["key"] for body in bodies(receiver)] == ["dgx-a/901"]


def test_hand_offs_run_once_however_often_they_are_queued(analysed, receiver):
    rule()
    diagnosis = analysed("902").current_diagnosis
    tasks.diagnosis_handoffs.apply(args=[diagnosis.pk])  # a second message for the same diagnosis
    assert Incident.objects.get().events == 1


def test_hand_offs_that_always_fail_are_given_up(analysed, monkeypatch, receiver, caplog):
    rule()

    def failing(**kwargs):
        raise RuntimeError("a bug in a hand-off")

    monkeypatch.setattr(notifications, "diagnosis_notify", failing)
    monkeypatch.setitem(tasks.diagnosis_handoffs.app.conf, "task_eager_propagates", False)
    diagnosis = analysed("903").current_diagnosis
    for _ in range(outbox.REQUEUE_AT_MOST):
        minutes_pass(3)
        tasks.send_due_notifications.apply()
        assert PendingHandoff.objects.get().requeued >= 1  # the failed run put its note back
    minutes_pass(3)
    tasks.send_due_notifications.apply()
    assert not PendingHandoff.objects.exists()
    assert f"gave up the hand-offs of diagnosis {diagnosis.pk} after 5 tries" in caplog.text


# -- a real worker -------------------------------------------------------------------------------------------------

BROKER = os.environ.get("FAULTLINE_TEST_BROKER_URL", "redis://127.0.0.1:6379/10")


@pytest.mark.django_db(transaction=True)
def test_a_real_worker_delivers_after_the_endpoint_fails(
    webhook_receiver, celery_worker_process, make_bundle, tmp_path, bundle_root
):
    """The whole path in real processes: a worker analyses an uploaded attempt, its announcement queues the
    hand-offs, beat's tick queues the delivery, the endpoint fails once and the retry delivers."""
    import subprocess
    import sys
    import time
    from pathlib import Path

    import redis
    from django.db import connection

    if connection.vendor != "postgresql":
        pytest.skip("the worker shares the test database: it needs PostgreSQL")
    redis.Redis.from_url(BROKER).flushdb()
    environment = {
        "PATH": os.environ["PATH"],
        "DATABASE_URL": celery_worker_process.database_url(),
        "CELERY_BROKER_URL": BROKER,
        "FAULTLINE_BUNDLE_ROOT": str(bundle_root),
        "FAULTLINE_VAR_DIR": str(tmp_path / "var"),
        "FAULTLINE_NOTIFICATION_TICK": "1",
        "FAULTLINE_NOTIFICATION_BACKOFF": "1",
        URL_VARIABLE: f"{webhook_receiver.url}/hooks/faultline",
    }
    NotificationRule.objects.create(name="worker", url_env=URL_VARIABLE, group_seconds=0)
    webhook_receiver.statuses.append(503)
    start = datetime.now(UTC).replace(microsecond=0) - timedelta(hours=2)
    make_bundle(job_id="4242", start=start)
    celery_worker_process("handoffs", environment)
    subprocess.run([sys.executable, "manage.py", "ingest", "-v0", str(tmp_path / "bundles")],
                   cwd=Path(__file__).resolve().parents[2], env=environment, check=True)  # fmt: skip
    deadline = time.monotonic() + 90
    while not Incident.objects.filter(state=Incident.State.SENT).exists() and time.monotonic() < deadline:
        time.sleep(0.2)

    incident = Incident.objects.get()
    assert incident.state == Incident.State.SENT
    assert list(incident.deliveries.order_by("number").values_list("number", "ok")) == [(1, False), (2, True)]
    assert len(bodies(webhook_receiver)) == 2
    assert bodies(webhook_receiver)[1]["items"][0]["job_id"] == "4242"


def test_a_re_analysis_with_another_revision_notifies_nobody(receiver, analysed, django_capture_on_commit_callbacks):
    from diagnoses.services import analysis
    from rules import services as rule_services

    rule()
    attempt = analysed("950")
    assert Incident.objects.get().events == 1
    first = rule_services.active_revision()
    draft = rule_services.revision_create(ruleset=first.ruleset, text=first.text.replace("# ", "## ", 1))
    rule_services.revision_activate(revision=draft)
    announced = []

    def listen(sender, **kwargs):
        announced.append((kwargs["diagnosis_id"], kwargs["first"]))

    diagnosis_recorded.connect(listen)
    try:
        with django_capture_on_commit_callbacks(execute=True) as queued:
            diagnosis = analysis.attempt_analyse(attempt_id=attempt.pk)
    finally:
        diagnosis_recorded.disconnect(listen)
    assert diagnosis.revision == draft
    assert announced == [(diagnosis.pk, False)]  # announced as a re-analysis
    assert queued == []  # and the hand-offs let it pass: nothing queued
    assert not PendingHandoff.objects.exists()
    assert Incident.objects.get().events == 1


def test_a_test_message_goes_out_now_with_the_documented_body_and_is_neither_an_incident_nor_counted(
    receiver, person, db
):
    from diagnoses.models import EventCount
    from handoffs.channels import DeliveryError

    admin = person("admin", "ada")
    webhook = rule(outcomes=["attributed"], group_seconds=600)  # neither its filters nor its window hold a test back
    answer = notifications.rule_test(rule=webhook, user=admin)
    assert answer == "HTTP 200 ok"
    [body] = bodies(receiver)
    assert set(body) == {"version", "idempotency_key", "rule", "trigger", "summary", "incident", "items",
                         "items_omitted", "test"}  # fmt: skip
    assert body["idempotency_key"].startswith(f"faultline-test-{webhook.pk}-")
    assert (body["version"], body["rule"], body["test"], body["items_omitted"]) == (1, "gpu faults", True, 0)
    assert body["summary"] == "Faultline: a test of the notification rule gpu faults, sent by ada"
    assert (body["incident"]["id"], body["incident"]["key"]) == (None, "test")
    assert body["incident"]["url"] == f"http://localhost:8000/notifications/#rule-{webhook.pk}"
    assert body["items"] == [{"kind": "test", "text": "a test of the notification rule gpu faults, sent by ada",
                              "url": body["incident"]["url"]}]  # fmt: skip
    assert [Incident.objects.count(), Delivery.objects.count(), EventCount.objects.count()] == [0, 0, 0]

    email = rule(name="mail", channel="email", url_env="", recipients=["oncall@example.org"])
    assert notifications.rule_test(rule=email, user=admin) == "e-mail to 1 recipient(s)"
    assert mail.outbox[0].to == ["oncall@example.org"]
    assert "a test of the notification rule mail" in mail.outbox[0].body

    receiver.statuses.append(404)
    with pytest.raises(DeliveryError, match="HTTP 404"):
        notifications.rule_test(rule=webhook, user=admin)


def test_admins_send_a_test_from_the_page_and_see_the_endpoints_answer(receiver, client_for, db):
    webhook = rule()
    page = client_for("admin").post(f"/notifications/rules/{webhook.pk}/test", follow=True)
    assert "Test message of gpu faults sent: HTTP 200 ok" in page.content.decode()
    receiver.statuses.append(503)
    page = client_for("admin", "ada").post(f"/notifications/rules/{webhook.pk}/test", follow=True)
    assert "The test message of gpu faults failed: HTTP 503 unavailable" in page.content.decode()
    assert client_for("triager").post(f"/notifications/rules/{webhook.pk}/test").status_code == 403
    assert len(bodies(receiver)) == 2
