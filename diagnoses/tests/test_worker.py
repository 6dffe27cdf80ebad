"""A real Celery worker, killed with SIGKILL mid-task: every attempt still ends with exactly one diagnosis.

Needs PostgreSQL (the worker and this test share the test database) and Redis (the broker:
``FAULTLINE_TEST_BROKER_URL``, default ``redis://127.0.0.1:6379/3``, flushed by the test).
"""

import os
import subprocess
import sys
from pathlib import Path

import pytest
import redis
from django.db import connection
from django.db.models import Count

from diagnoses.models import Attempt
from diagnoses.tests.workers import database_url, kill, start_worker, wait_for

pytestmark = pytest.mark.django_db(transaction=True)
BASE_DIR = Path(__file__).resolve().parents[2]
BROKER = os.environ.get("FAULTLINE_TEST_BROKER_URL", "redis://127.0.0.1:6379/3")
ATTEMPTS = 20


@pytest.fixture
def environment(tmp_path, bundle_root):
    if connection.vendor != "postgresql":
        pytest.skip("the worker test shares the test database with a worker process: it needs PostgreSQL")
    redis.Redis.from_url(BROKER).flushdb()
    return {
        "PATH": os.environ["PATH"],
        "DATABASE_URL": database_url(),
        "CELERY_BROKER_URL": BROKER,
        "FAULTLINE_BUNDLE_ROOT": str(bundle_root),
        "FAULTLINE_VAR_DIR": str(tmp_path / "var"),
        "FAULTLINE_STUCK_AFTER": "3",  # the reaper re-queues an attempt analysing for longer (each takes ~0.4 s)
        "FAULTLINE_REAPER_INTERVAL": "1",
    }


def test_a_worker_killed_mid_task_loses_no_attempt(make_bundle, environment, tmp_path):
    for number in range(ATTEMPTS):
        make_bundle(job_id=str(1000 + number), slow_lines=2500)
    workers = [start_worker("first", environment, tmp_path)]
    try:
        subprocess.run(
            [sys.executable, "manage.py", "ingest", "-v0", str(tmp_path / "bundles")],
            cwd=BASE_DIR, env=environment, check=True,
        )  # fmt: skip

        def mid_run():
            done = Attempt.objects.filter(analysis_state="analysed").count()
            running = Attempt.objects.filter(analysis_state="analysing").first()
            return running if done >= 3 and running else None

        running = wait_for(mid_run, 60, "the first worker to be analysing its fourth attempt")
        kill(workers[0])  # the worker and its beat
        running.refresh_from_db()
        assert running.analysis_state == "analysing", "the worker was to be killed in the middle of a task"
        assert Attempt.objects.filter(analysis_state="analysed").count() < ATTEMPTS

        workers.append(start_worker("second", environment, tmp_path))
        wait_for(
            lambda: Attempt.objects.filter(analysis_state="analysed").count() == ATTEMPTS,
            120,
            "the second worker to analyse every attempt",
        )
    finally:
        for worker in workers:
            kill(worker)

    counts = Attempt.objects.annotate(n=Count("diagnoses")).values_list("n", flat=True)
    assert list(counts) == [1] * ATTEMPTS
    running.refresh_from_db()
    assert running.analysis_runs == 2  # started by the first worker, re-queued by the reaper, finished by the second
    assert running.current_diagnosis.subdomain == "gpu.bus"


def test_a_worker_keeps_its_database_connection_from_task_to_task(make_bundle, environment, tmp_path):
    for number in range(4):
        make_bundle(job_id=str(2000 + number))
    worker = start_worker("keeper", environment, tmp_path, beat=False)
    try:
        subprocess.run(
            [sys.executable, "manage.py", "ingest", "-v0", str(tmp_path / "bundles")],
            cwd=BASE_DIR, env=environment, check=True,
        )  # fmt: skip
        wait_for(lambda: Attempt.objects.filter(analysis_state="analysed").count() == 4, 60, "four analyses")
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT backend_start FROM pg_stat_activity "
                "WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )
            backends = [started for (started,) in cursor.fetchall()]
    finally:
        kill(worker)
    first_claim = min(Attempt.objects.values_list("analysis_started", flat=True))
    assert len(backends) == 1, backends  # the worker's: open after its last task
    assert backends[0] < first_claim  # and opened before the first of the four analyses
