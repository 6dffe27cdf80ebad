"""The fault loop: gunicorn, a Celery worker (with beat) and a private Redis, real processes, while bundles are
uploaded through HTTP and, round after round, the worker is SIGKILLed, Redis restarts without persistence
(its queue is lost) and the database terminates every connection. Every upload is accepted (202) and every
attempt ends analysed exactly once: nothing lost, nothing duplicated.

Needs PostgreSQL (shared with the processes) and ``redis-server``; the private Redis listens on
``FAULTLINE_TEST_FAULT_REDIS_PORT`` (default 6391) and gunicorn on ``FAULTLINE_TEST_WEB_PORT`` (default 18601).
"""

import os

import pytest
from django.contrib.auth.models import Group, User
from django.db import connection
from django.db.models import Count
from rest_framework.authtoken.models import Token

from access.roles import TRIAGER
from diagnoses.models import Attempt
from diagnoses.tests.workers import (
    database_url,
    kill,
    port_free,
    start_redis,
    start_web,
    start_worker,
    upload,
    wait_for,
)

pytestmark = pytest.mark.django_db(transaction=True)
REDIS_PORT = int(os.environ.get("FAULTLINE_TEST_FAULT_REDIS_PORT", "6391"))
WEB_PORT = int(os.environ.get("FAULTLINE_TEST_WEB_PORT", "18601"))
ROUNDS = 2
FAULTS = ("kill the worker", "restart redis", "terminate database connections")


@pytest.fixture
def stack(tmp_path, bundle_root, transactional_roles):  # transactional_roles: the role groups of transactional tests
    if connection.vendor != "postgresql":
        pytest.skip("the processes share the test database: it needs PostgreSQL")
    if not (port_free(REDIS_PORT) and port_free(WEB_PORT)):
        pytest.skip(f"port {REDIS_PORT} or {WEB_PORT} is taken")
    user = User.objects.create_user("uploader")
    user.groups.add(Group.objects.get(name=TRIAGER))
    environment = {
        "PATH": os.environ["PATH"],
        "DATABASE_URL": database_url(),
        "DATABASE_CONN_MAX_AGE": "60",  # persistent connections, as in production
        "CELERY_BROKER_URL": f"redis://127.0.0.1:{REDIS_PORT}/0",
        "FAULTLINE_BUNDLE_ROOT": str(bundle_root),
        "FAULTLINE_VAR_DIR": str(tmp_path / "var"),
        "FAULTLINE_STUCK_AFTER": "4",
        "FAULTLINE_REQUEUE_AFTER": "3",
        "FAULTLINE_REAPER_INTERVAL": "1",
        "FAULTLINE_BROKER_VISIBILITY_TIMEOUT": "30",
        "FAULTLINE_MAX_ANALYSIS_RUNS": "10",
        "DJANGO_DEBUG": "0",
    }
    processes = {"redis": start_redis(REDIS_PORT, tmp_path)}
    processes["web"] = start_web(WEB_PORT, environment, tmp_path)
    processes["worker"] = start_worker("faults", environment, tmp_path)
    stack = {
        "processes": processes,
        "environment": environment,
        "tmp": tmp_path,
        "base": f"http://127.0.0.1:{WEB_PORT}",
        "token": Token.objects.create(user=user).key,
    }
    yield stack
    for process in processes.values():
        kill(process)


def test_no_attempt_is_lost_or_analysed_twice_through_worker_kills_broker_restarts_and_dropped_connections(
    stack, make_bundle, tar_gz
):
    processes, tmp_path = stack["processes"], stack["tmp"]
    answers = []
    serial = iter(range(1000, 2000))

    def send(count):
        for _ in range(count):
            answers.append(upload(stack["base"], stack["token"], tar_gz(make_bundle(job_id=str(next(serial))))))

    for round_number in range(ROUNDS):
        for fault in FAULTS:
            send(3)
            if fault == "kill the worker":
                wait_for(
                    lambda: (
                        Attempt.objects.filter(analysis_state="analysing").exists()
                        or not Attempt.objects.filter(analysis_state="queued").exists()
                    ),
                    60,
                    "an analysis in flight",
                )
                kill(processes["worker"])  # the worker and its beat
                send(2)  # stored while no worker runs
                processes["worker"] = start_worker(f"faults-{round_number}", stack["environment"], tmp_path)
            elif fault == "restart redis":
                processes["redis"].terminate()  # without persistence: the queued messages are lost
                processes["redis"].wait()
                send(2)  # stored while the broker is down
                processes["redis"] = start_redis(REDIS_PORT, tmp_path)
            else:
                with connection.cursor() as cursor:
                    cursor.execute(
                        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                        "WHERE datname = current_database() AND pid <> pg_backend_pid()"
                    )
                send(2)  # the web processes' persistent connections are gone

    assert [status for status, _ in answers] == [202] * len(answers), [a for a in answers if a[0] != 202]
    wait_for(
        lambda: (
            Attempt.objects.filter(analysis_state="analysed").count() == len(answers)
            or Attempt.objects.filter(analysis_state="failed").exists()
        ),
        180,
        "every attempt to be analysed",
    )
    states = dict(Attempt.objects.values_list("analysis_state").annotate(n=Count("pk")))
    assert states == {"analysed": len(answers)}
    diagnoses = Attempt.objects.annotate(n=Count("diagnoses")).values_list("n", flat=True)
    assert list(diagnoses) == [1] * len(answers)
    assert sorted(body["id"] for _, body in answers) == sorted(Attempt.objects.values_list("pk", flat=True))
