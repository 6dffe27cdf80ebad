import pytest

from diagnoses.tests.bundles import write_bundle


@pytest.fixture(autouse=True)
def bundle_root(settings, tmp_path):
    """Each test stores bundles in its own root."""
    root = tmp_path / "store"
    settings.FAULTLINE_BUNDLE_ROOT = root
    return root


@pytest.fixture
def make_bundle(tmp_path):
    """Write a test bundle (see ``bundles.write_bundle``) under the test's own folder."""
    source = tmp_path / "bundles"

    def make(**fields):
        return write_bundle(source, **fields)

    return make


def stored_bundles(root) -> list:
    """The bundle directories under ``root`` (staging excluded)."""
    if not root.exists():
        return []
    return [path for path in root.glob("*/*") if path.parent.name != ".incoming"]


def staging_left(root) -> list:
    incoming = root / ".incoming"
    return list(incoming.iterdir()) if incoming.exists() else []
