"""A watched folder of bundles as a scheduler (the ``folder`` kind)."""

import json
import os
import shutil
import time

import pytest

from connectors.base import ConnectorError
from connectors.folder import WatchedFolder, scan_folder


def bundle(write_bundle, folder, name):
    """A small bundle named ``name`` in ``folder``: one workload log, job id ``name`` on cluster ``c``."""
    return write_bundle(
        folder / name,
        logs={"out.log": ["x"]},
        cluster="c",
        scheduler="static",
        job_id=name,
        nodes=["n1"],
        start="2026-11-02T10:00:00Z",
        end="2026-11-02T11:00:00Z",
    )


def test_scan_folder_returns_new_settled_complete_bundles(tmp_path, write_bundle):
    old, fresh = bundle(write_bundle, tmp_path, "old"), bundle(write_bundle, tmp_path, "fresh")
    (tmp_path / "incomplete" / "logs").mkdir(parents=True)  # no attempt.json (yet)
    bundle(write_bundle, tmp_path, ".copying")
    (tmp_path / "note.txt").write_text("not a bundle")
    now = time.time()
    for path in [old, *old.rglob("*")]:
        os.utime(path, (now - 120, now - 120))
    assert scan_folder(tmp_path, set(), settle=30, now=now) == [old]
    assert scan_folder(tmp_path, {"old"}, settle=30, now=now + 60) == [fresh]
    with pytest.raises(ConnectorError, match="not a directory"):
        scan_folder(tmp_path / "missing", set(), settle=30, now=now)


def test_a_watched_folder_discovers_each_bundle_once_and_skips_bad_ones(tmp_path, write_bundle):
    bundle(write_bundle, tmp_path, "a")
    bad = bundle(write_bundle, tmp_path, "b")
    (bad / "attempt.json").write_text("{not json")
    folder = WatchedFolder("drop", {"path": str(tmp_path), "settle_seconds": 0})
    found, cursor = folder.discover(None)
    assert [d.attempt.job_id for d in found] == ["a"]
    assert json.loads(cursor) == ["a", "b"]
    assert len(folder.skipped) == 1
    assert folder.skipped[0].startswith(f"{bad}:")
    context = folder.attempt_context(found[0])
    assert [s.ref for s in context.streams] == ["logs/out.log"]
    assert folder.discover(cursor)[0] == []


def test_the_cursor_forgets_bundles_removed_from_the_folder(tmp_path, write_bundle):
    import shutil

    for name in ("a", "b", "c"):
        bundle(write_bundle, tmp_path, name)
    folder = WatchedFolder("drop", {"path": str(tmp_path), "settle_seconds": 0})
    _, cursor = folder.discover(None)
    shutil.rmtree(tmp_path / "a")
    shutil.rmtree(tmp_path / "b")

    found, cursor = folder.discover(cursor)

    assert (found, json.loads(cursor)) == ([], ["c"])


def test_a_watched_folder_of_one_cluster_skips_bundles_naming_another(tmp_path, write_bundle):
    bundle(write_bundle, tmp_path, "a")
    folder = WatchedFolder("drop", {"path": str(tmp_path), "settle_seconds": 0, "cluster": "lab"})
    found, _ = folder.discover(None)
    assert found == []
    assert folder.skipped == [f"{tmp_path / 'a'}: names cluster 'c'; this folder is 'lab''s"]
    own = WatchedFolder("drop", {"path": str(tmp_path), "settle_seconds": 0, "cluster": "c"})
    assert [d.attempt.job_id for d in own.discover(None)[0]] == ["a"]


def test_a_bundle_that_went_bad_after_discovery_is_a_permanent_error(tmp_path, write_bundle):
    bundle(write_bundle, tmp_path, "a")
    folder = WatchedFolder("drop", {"path": str(tmp_path), "settle_seconds": 0})
    (found,), _ = folder.discover(None)
    shutil.rmtree(tmp_path / "a")

    with pytest.raises(ConnectorError, match="not a directory") as failed:
        folder.attempt_context(found)
    assert failed.value.permanent
