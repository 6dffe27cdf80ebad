import os

import pytest

from rules.tests.workbench import store_attempts

# Debian's Chromium for Playwright (playwright cannot download its own browsers here): scripts/browser.sh
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
    "--disable-sync", "--no-first-run", "--disable-quic",
]  # fmt: skip


@pytest.fixture(autouse=True)
def bundle_root(settings, tmp_path):
    """Each test stores bundles in its own root."""
    root = tmp_path / "store"
    settings.FAULTLINE_BUNDLE_ROOT = root
    return root


@pytest.fixture
def stored(tmp_path, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        attempts = store_attempts(tmp_path / "bundles")
    for attempt in attempts.values():
        attempt.refresh_from_db()
    return attempts


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args):
    # Playwright's sync API keeps an event loop running in the test thread from here on, and Django
    # refuses database calls in a thread with a running loop unless told that this is safe (it is:
    # the loop only drives the browser). pytest-django runs these transactional tests last.
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    return {
        **browser_type_launch_args,
        "executable_path": CHROMIUM,
        "args": [*browser_type_launch_args.get("args", []), *CHROMIUM_ARGS],
    }
