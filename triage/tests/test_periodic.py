"""The embedded default runs Celery beat's schedule in a thread of ``manage.py serve`` (``triage.periodic``): each task
at start and then at its interval, a failing one logged without stopping the others; and under ``make run``'s
settings (SQLite, no broker) a notification reaches its endpoint with nothing else running."""

import logging
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.conf import settings

from triage.celery import app
from triage.periodic import PeriodicTasks

ROOT = Path(__file__).resolve().parents[2]


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@pytest.mark.django_db
def test_each_task_runs_at_start_then_at_its_interval():
    clock = Clock()
    schedule = {name: settings.CELERY_BEAT_SCHEDULE[name] for name in ("poll-clusters", "reap-stuck-attempts")}
    periodic = PeriodicTasks(app, schedule, clock=clock)
    assert periodic.run_due() == ["poll-clusters", "reap-stuck-attempts"]
    clock.now = 14.0
    assert periodic.run_due() == []
    clock.now = 15.0  # FAULTLINE_DISCOVERY_TICK
    assert periodic.run_due() == ["poll-clusters"]
    clock.now = 60.0  # FAULTLINE_REAPER_INTERVAL
    assert periodic.run_due() == ["poll-clusters", "reap-stuck-attempts"]


@pytest.mark.django_db
def test_a_failing_task_is_logged_and_the_others_still_run(caplog):
    schedule = {
        "drain": {"task": "handoffs.tasks.run_drain", "schedule": 60.0},  # no drain id: it raises
        "poll": settings.CELERY_BEAT_SCHEDULE["poll-clusters"],
    }
    periodic = PeriodicTasks(app, schedule, clock=Clock())
    with caplog.at_level(logging.ERROR, logger="triage.periodic"):
        assert periodic.run_due() == ["drain", "poll"]
    assert "periodic task drain (handoffs.tasks.run_drain) failed" in caplog.text


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def manage(*args: str, env: dict) -> subprocess.CompletedProcess:
    command = [sys.executable, "manage.py", *args]
    return subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=True)


def test_make_run_sends_notifications_with_no_beat_and_no_broker(tmp_path, make_bundle, webhook_receiver):
    """``make run``'s processes only: ``manage.py serve`` and a bundle ingested (analysed in-process); the webhook
    arrives because the server's thread runs the notification tick."""
    env = {
        **os.environ,
        "DATABASE_URL": f"sqlite:///{tmp_path}/faultline.sqlite3",
        "FAULTLINE_BUNDLE_ROOT": str(tmp_path / "store"),
        "CELERY_BROKER_URL": "",
        "FAULTLINE_NOTIFICATION_TICK": "1",
        "DJANGO_SECURE_COOKIES": "0",
        "FAULTLINE_TEST_HOOK_URL": f"{webhook_receiver.url}/hook",
    }
    manage("migrate", "--noinput", "-v0", env=env)
    rule = "rule_save(name='all', channel='webhook', url_env='FAULTLINE_TEST_HOOK_URL', group_seconds=1)"
    manage("shell", "-c", f"from handoffs.services.notifications import rule_save; {rule}", env=env)
    server = subprocess.Popen(
        [sys.executable, "manage.py", "serve", "--noreload", f"127.0.0.1:{free_port()}"],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    try:
        manage("ingest", "-v0", str(make_bundle(job_id="77")), env=env)
        deadline = time.monotonic() + 60
        while not webhook_receiver.requests and time.monotonic() < deadline and server.poll() is None:
            time.sleep(0.2)
        assert server.poll() is None, server.stdout.read()
        assert [request.json()["incident"]["key"] for request in webhook_receiver.requests] == ["dgx-a/77"]
    finally:
        server.terminate()
        output, _ = server.communicate(timeout=30)
    assert "Periodic tasks run in this process (no broker)." in output
