"""Real Celery worker processes (with their beat) sharing the test database, for the tests about the worker."""

import subprocess
import sys
import time
from pathlib import Path

from django.db import connection

BASE_DIR = Path(__file__).resolve().parents[2]


def database_url() -> str:
    """The test database, for a worker process that shares it."""
    db = connection.settings_dict
    return f"postgres://{db['USER']}:{db['PASSWORD'] or ''}@{db['HOST']}:{db['PORT'] or 5432}/{db['NAME']}"


def start_worker(name: str, environment: dict, tmp_path: Path) -> subprocess.Popen:
    log = open(tmp_path / f"{name}.log", "wb")  # noqa: SIM115 - closed with the process
    command = [sys.executable, "-m", "celery", "-A", "triage", "worker", "--pool=solo", "--loglevel=INFO"]
    command += ["-n", f"{name}@%h", "--beat", "--schedule", str(tmp_path / f"{name}-beat")]
    return subprocess.Popen(command, cwd=BASE_DIR, env=environment, stdout=log, stderr=subprocess.STDOUT)


def wait_for(condition, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.01)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")
