import pytest

from rules.tests.workbench import store_attempts


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
