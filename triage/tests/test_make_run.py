"""``make run`` as the README says, on a port of its own (``PORT=``) and a fresh ``var/``: it serves the demo data, its
login signs in, ``/metrics`` answers localhost without a token, and a restart keeps the password and the session (no
one is signed out)."""

import os
import re
import signal
import socket
import subprocess
import time
from pathlib import Path

import requests

ROOT = Path(__file__).resolve().parents[2]
SIGN_IN = re.compile(r"Sign in at (http://localhost:\d+) as demo with the password (\S+)")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class MakeRun:
    """``make run PORT=port`` in its own process group (``make``, the server and its reloader), stopped with it."""

    def __init__(self, port: int, var: Path, log: Path):
        environment = {
            key: value for key, value in os.environ.items() if key not in ("DATABASE_URL", "CELERY_BROKER_URL")
        }
        environment |= {"FAULTLINE_VAR_DIR": str(var), "PYTHONUNBUFFERED": "1"}
        self.log = log
        self.output = open(log, "w")  # noqa: SIM115 - closed in stop()
        self.process = subprocess.Popen(
            ["make", "--no-print-directory", "run", f"PORT={port}"], cwd=ROOT, env=environment, stdout=self.output,
            stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
        self.url = f"http://127.0.0.1:{port}"

    def sign_in_line(self, *, timeout: float) -> tuple[str, str]:
        """The address and password ``make run`` printed, once its server answers."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.process.poll() is None, self.log.read_text()
            found = SIGN_IN.search(self.log.read_text())
            if found:
                try:
                    requests.get(f"{self.url}/accounts/login/", timeout=2)
                    return found[1], found[2]
                except requests.ConnectionError:
                    pass
            time.sleep(0.5)
        raise AssertionError(f"make run did not start in {timeout} s:\n{self.log.read_text()}")

    def stop(self) -> None:
        os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()
        self.output.close()


def sign_in(session: requests.Session, url: str, password: str) -> requests.Response:
    session.get(f"{url}/accounts/login/", timeout=10)
    return session.post(
        f"{url}/accounts/login/",
        data={"username": "demo", "password": password, "csrfmiddlewaretoken": session.cookies["csrftoken"]},
        headers={"Referer": f"{url}/accounts/login/"},
        timeout=10,
    )


def test_make_run_takes_a_port_serves_metrics_to_localhost_and_keeps_its_login_across_restarts(tmp_path):
    port = free_port()
    first = MakeRun(port, tmp_path / "var", tmp_path / "first.log")
    try:
        address, password = first.sign_in_line(timeout=400)
        assert address == f"http://localhost:{port}"
        session = requests.Session()
        overview = sign_in(session, first.url, password)
        assert overview.status_code == 200
        assert "<h1>Overview</h1>" in overview.text, overview.text[:500]
        metrics = requests.get(f"{first.url}/metrics", timeout=30)  # from localhost, no token, no session
        assert metrics.status_code == 200
        assert re.search(r'faultline_attempts_received_total\{cluster="dgx-a",via="upload"\} [1-9]', metrics.text)
        clusters = session.get(f"{first.url}/clusters/", timeout=10).text
        assert "A demo scheduler: drains and resumes are recorded in" in clusters
    finally:
        first.stop()

    again = MakeRun(port, tmp_path / "var", tmp_path / "again.log")
    try:
        assert again.sign_in_line(timeout=120) == (address, password)  # the same password
        assert "demo data not loaded again" in again.log.read_text()
        still = session.get(f"{again.url}/", timeout=10, allow_redirects=False)  # the session from before the restart
        assert still.status_code == 200
        assert "<h1>Overview</h1>" in still.text
    finally:
        again.stop()
