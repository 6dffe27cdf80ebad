"""Real processes sharing the test database, for the tests about the worker and the service: Celery workers
(with their beat), a private Redis, gunicorn."""

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from django.db import connection

BASE_DIR = Path(__file__).resolve().parents[2]


def database_url() -> str:
    """The test database, for a worker process that shares it."""
    db = connection.settings_dict
    return f"postgres://{db['USER']}:{db['PASSWORD'] or ''}@{db['HOST']}:{db['PORT'] or 5432}/{db['NAME']}"


def start_worker(name: str, environment: dict, tmp_path: Path, *, beat: bool = True) -> subprocess.Popen:
    """A Celery worker (solo pool), with its own beat unless ``beat`` is False."""
    log = open(tmp_path / f"{name}.log", "wb")  # noqa: SIM115 - closed with the process
    command = [sys.executable, "-m", "celery", "-A", "triage", "worker", "--pool=solo", "--loglevel=INFO"]
    command += ["-n", f"{name}@%h"]
    if beat:
        command += ["--beat", "--schedule", str(tmp_path / f"{name}-beat")]
    return subprocess.Popen(
        command, cwd=BASE_DIR, env=environment, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
    )


def start_beat(environment: dict, tmp_path: Path) -> subprocess.Popen:
    """Celery beat as a process of its own (as docker-compose.yml runs it)."""
    log = open(tmp_path / "beat.log", "wb")  # noqa: SIM115 - closed with the process
    command = [sys.executable, "-m", "celery", "-A", "triage", "beat", "--loglevel=INFO"]
    command += ["--schedule", str(tmp_path / "beat-schedule")]
    return subprocess.Popen(
        command, cwd=BASE_DIR, env=environment, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
    )


def kill(process: subprocess.Popen) -> None:
    """SIGKILL the process and everything it started (its session: a worker's beat, gunicorn's workers)."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()


def wait_for(condition, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.01)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


def port_free(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) != 0


def wait_for_port(port: int, process: subprocess.Popen, timeout: float = 30) -> None:
    wait_for(lambda: not port_free(port) or process.poll() is not None, timeout, f"a server on port {port}")
    if process.poll() is not None:
        raise AssertionError(f"the server for port {port} exited ({process.returncode})")


def start_redis(port: int, tmp_path: Path) -> subprocess.Popen:
    """A private Redis without persistence: what it holds is lost when it stops."""
    command = ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
    command += ["--dir", str(tmp_path)]
    log = open(tmp_path / f"redis-{port}.log", "ab")  # noqa: SIM115 - closed with the process
    process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    wait_for_port(port, process)
    return process


def start_web(port: int, environment: dict, tmp_path: Path, workers: int = 2) -> subprocess.Popen:
    """gunicorn serving Faultline on 127.0.0.1:``port`` (as docker-compose.yml runs it)."""
    log = open(tmp_path / f"web-{port}.log", "ab")  # noqa: SIM115 - closed with the process
    command = [sys.executable, "-m", "gunicorn", "triage.wsgi", "-b", f"127.0.0.1:{port}", "--workers", str(workers)]
    process = subprocess.Popen(
        command, cwd=BASE_DIR, env=environment, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
    )
    wait_for_port(port, process)
    return process


def http(method: str, url: str, *, body: bytes | None = None, headers: dict | None = None, timeout: float = 60):
    """(status, body) of one request; an HTTP error status is an answer, not an exception."""
    request = urllib.request.Request(url, data=body, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def upload(base: str, token: str, archive: bytes) -> tuple[int, dict | bytes]:
    """POST a bundle to ``/api/v1/attempts``: the status and the decoded answer."""
    headers = {"Authorization": f"Token {token}", "Content-Type": "application/gzip"}
    status, body = http("POST", f"{base}/api/v1/attempts", body=archive, headers=headers)
    try:
        return status, json.loads(body)
    except ValueError:
        return status, body
