"""Fixtures shared by every app's tests: the real servers that scripts/ start, and the browser.

The browser tests drive Debian's Chromium through Playwright.
"""

import os
import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest

ROOT = Path(__file__).resolve().parent

# Playwright's sync API runs an event loop in the test thread; Django would take the database calls
# of the test (not of the served pages) for calls from async code and refuse them.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

CHROMIUM = "/usr/bin/chromium"  # scripts/browser.sh installs it; Playwright cannot download browsers here
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]


@pytest.fixture(scope="session")
def prometheus_url() -> str:
    """The real Prometheus of scripts/prometheus.sh, with its backfilled DCGM and InfiniBand samples."""
    subprocess.run([str(ROOT / "scripts" / "prometheus.sh")], check=True, timeout=300)
    return Path("/var/tmp/faultline-prometheus/url").read_text().strip()


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args):
    return {
        **browser_type_launch_args,
        "executable_path": CHROMIUM,
        "args": [*browser_type_launch_args.get("args", []), *CHROMIUM_ARGS],
    }


@pytest.fixture(scope="session")
def browser_context_args(browser_context_args):
    return {**browser_context_args, "viewport": {"width": 1280, "height": 800}}


@pytest.fixture
def migrator_of(db):
    """``migrator_of((app, migration))`` migrates the test database to that migration (forwards or
    backwards, inside the test's transaction, which undoes it) and returns the app's models as they were
    then (``.Cluster``, ...)."""
    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor

    def migrate(target: tuple[str, str]) -> SimpleNamespace:
        executor = MigrationExecutor(connection)
        executor.migrate([target])
        apps = executor.loader.project_state([target]).apps
        return SimpleNamespace(**{model.__name__: model for model in apps.get_app_config(target[0]).get_models()})

    return migrate
