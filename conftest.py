"""Fixtures shared by the apps' tests: the real servers that scripts/ start."""

import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent


@pytest.fixture(scope="session")
def prometheus_url() -> str:
    """The real Prometheus of scripts/prometheus.sh, with its backfilled DCGM and InfiniBand samples."""
    subprocess.run([str(ROOT / "scripts" / "prometheus.sh")], check=True, timeout=300)
    return Path("/var/tmp/faultline-prometheus/url").read_text().strip()
