"""Outages (``diagnoses.outages``, docs/operations.md "Outages"), each made real: the database of a PostgreSQL cluster
that the test creates (``pg_createcluster`` on a port of its own; the shared server on 5432 is never touched) stopped
and started under gunicorn and a Celery worker, and the bundle store on a small tmpfs that fills up. The API answers
JSON 503/507 with ``Retry-After``, nothing is lost or half-stored, and the analyses that met the outage are retried by
their task, not left to the reaper."""

import json
import os
import socket
import subprocess
import sys
import time
from types import SimpleNamespace

import pytest
import redis

from access.roles import TRIAGER
from diagnoses.tests.workers import BASE_DIR, kill, start_web, start_worker, upload, wait_for

BROKER = os.environ.get("FAULTLINE_TEST_BROKER_URL", "redis://127.0.0.1:6379/3")
PORT = int(os.environ.get("FAULTLINE_TEST_WEB_PORT", "18601")) + 3


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def own_postgres():
    """A PostgreSQL cluster of the test's own (Debian's pg_createcluster, trust auth on 127.0.0.1, a free port) with
    an empty database ``faultline``: ``.url``, ``.stop()``, ``.start()``, ``.query(sql)``; dropped after the test."""
    version = sorted(os.listdir("/etc/postgresql"), key=lambda v: [int(p) for p in v.split(".")])[-1]
    name, port = f"outage{os.getpid()}", free_port()
    run = lambda *command: subprocess.run(command, check=True, capture_output=True, timeout=120)  # noqa: E731
    run("pg_createcluster", "-p", str(port), version, name, "--", "--auth-host=trust", "--auth-local=trust")
    control = lambda action, *extra: run("pg_ctlcluster", "--skip-systemctl-redirect", version, name, action, *extra)  # noqa: E731
    try:
        control("start")
        run("createdb", "-h", "127.0.0.1", "-p", str(port), "-U", "postgres", "faultline")
        url = f"postgres://postgres@127.0.0.1:{port}/faultline"

        def query(sql: str) -> list[tuple]:
            import psycopg

            with psycopg.connect(url.replace("postgres://", "postgresql://"), autocommit=True) as connection:
                return connection.execute(sql).fetchall()

        yield SimpleNamespace(url=url, stop=lambda: control("stop", "-m", "fast"), start=lambda: control("start"),
                              query=query)  # fmt: skip
    finally:
        subprocess.run(["pg_dropcluster", "--stop", version, name], capture_output=True, timeout=120)


def manage(environment: dict, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "manage.py", *args], cwd=BASE_DIR, env=environment, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


TOKEN = """
from django.contrib.auth.models import Group, User
from rest_framework.authtoken.models import Token
user = User.objects.create_user("outage-triager")
user.groups.add(Group.objects.get(name="{role}"))
print(Token.objects.create(user=user).key)
"""


def test_a_database_outage_answers_json_503_and_the_analyses_that_met_it_are_retried(
    own_postgres, tmp_path, bundle_root, make_bundle, tar_gz
):
    redis.Redis.from_url(BROKER).flushdb()
    environment = {
        "PATH": os.environ["PATH"],
        "DJANGO_DEBUG": "0",
        "DATABASE_URL": own_postgres.url,
        "CELERY_BROKER_URL": BROKER,
        "FAULTLINE_VAR_DIR": str(tmp_path / "var"),
        "FAULTLINE_BUNDLE_ROOT": str(bundle_root),
    }  # the reaper's defaults (FAULTLINE_REQUEUE_AFTER 900 s): only the task's own retry analyses them in time
    manage(environment, "migrate", "--noinput", "-v0")
    token = manage(environment, "shell", "-c", TOKEN.format(role=TRIAGER)).split()[-1]
    web = start_web(PORT, environment, tmp_path, workers=2)
    worker = None
    base = f"http://127.0.0.1:{PORT}"
    try:
        accepted = [upload(base, token, tar_gz(make_bundle(job_id=f"{n}"))) for n in (1, 2)]
        assert [status for status, _ in accepted] == [202, 202]  # queued: no worker runs yet

        own_postgres.stop()
        status, body = upload(base, token, tar_gz(make_bundle(job_id="3")))
        assert status == 503
        assert body["error"]["code"] == "database_unavailable"
        request = _request(f"{base}/api/v1/attempts", token)
        assert (request.status, request.getheader("Content-Type"), request.getheader("Retry-After")) == (
            503, "application/json", "10",
        )  # fmt: skip
        assert json.loads(request.read())["error"]["code"] == "database_unavailable"

        worker = start_worker("outage", environment, tmp_path, beat=False)  # meets the outage with both analyses
        log = tmp_path / "outage.log"
        wait_for(lambda: log.read_text().count("Retry in") >= 2, 60, "both analyses to be retried")
        time.sleep(2)
        own_postgres.start()
        back = time.monotonic()

        def analysed():
            return own_postgres.query("SELECT count(*) FROM diagnoses_attempt WHERE analysis_state = 'analysed'")[0][0]

        wait_for(lambda: analysed() == 2, 90, "the analyses after the database came back")
        assert time.monotonic() - back < 90
        rows = own_postgres.query("SELECT attempt_id, count(*) FROM diagnoses_diagnosis GROUP BY attempt_id")
        assert sorted(count for _, count in rows) == [1, 1]
        assert own_postgres.query("SELECT count(*) FROM diagnoses_attempt")[0][0] == 2  # the refused one: not stored
        assert upload(base, token, tar_gz(make_bundle(job_id="3")))[0] == 202  # posted again, accepted
    finally:
        for process in (web, worker):
            if process is not None:
                kill(process)


def _request(url: str, token: str):
    import http.client

    connection = http.client.HTTPConnection("127.0.0.1", PORT, timeout=30)
    connection.request("GET", url.removeprefix(f"http://127.0.0.1:{PORT}"), headers={"Authorization": f"Token {token}"})
    return connection.getresponse()


@pytest.fixture
def small_disk(tmp_path, settings):
    """The bundle root on an 8 MiB tmpfs (needs root, as the test suite runs)."""
    root = tmp_path / "small"
    root.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(root)], capture_output=True)
    if mounted.returncode != 0:
        pytest.fail(f"cannot mount a tmpfs for the disk-full test: {mounted.stderr.decode()}")
    settings.FAULTLINE_BUNDLE_ROOT = root
    yield root
    subprocess.run(["umount", str(root)], check=True)


@pytest.mark.django_db
def test_a_full_disk_answers_json_507_and_keeps_what_was_accepted(small_disk, make_bundle, tar_gz, api_client_for):
    from diagnoses.models import Attempt

    client = api_client_for(TRIAGER)
    answers = []
    for number in range(6):
        bundle = make_bundle(job_id=f"full-{number}")
        with open(bundle / "logs" / "noise.log", "w") as noise:  # 2 MiB of incompressible lines
            for _ in range(2048):
                noise.write(os.urandom(511).hex()[:1023] + "\n")
        response = client.post("/api/v1/attempts", tar_gz(bundle), content_type="application/gzip")
        answers.append((response, bundle))
        if response.status_code != 202:
            break
    refused, bundle = answers[-1]
    assert refused.status_code == 507
    assert refused["Content-Type"] == "application/json"
    assert int(refused["Retry-After"]) > 0
    assert refused.json()["error"]["code"] == "storage_full"
    accepted = [(response.json()["id"], bundle) for response, bundle in answers if response.status_code == 202]
    assert len(accepted) >= 2
    assert sorted(Attempt.objects.values_list("pk", flat=True)) == sorted(pk for pk, _ in accepted)
    assert list((small_disk / ".incoming").iterdir()) == []  # nothing half-written is left
    for pk, source in accepted:  # each accepted bundle is whole
        stored = small_disk / Attempt.objects.get(pk=pk).bundle
        files = {p.relative_to(source): p.read_bytes() for p in source.rglob("*") if p.is_file()}
        assert files == {p.relative_to(stored): p.read_bytes() for p in stored.rglob("*") if p.is_file()}

    analyze = client.post("/api/v1/analyze", tar_gz(bundle), content_type="application/gzip")
    assert (analyze.status_code, analyze.json()["error"]["code"]) == (507, "storage_full")
    assert list((small_disk / ".incoming").iterdir()) == []
