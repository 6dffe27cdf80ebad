"""A machine's bounded cache of bundles fetched from the object store, for the engine to read as a directory.

A bundle is fetched (staged in ``.incoming``, then renamed) into ``FAULTLINE_BUNDLE_ROOT/.cache/<its place, '/' as
'-'>``; whoever reads it holds a shared lock on the lock file beside it (``<that name>.lock``, whose modification time
says when it was last used). After each use the cache is trimmed to ``FAULTLINE_BUNDLE_CACHE_BYTES``: the least
recently used bundles that no process holds are removed (one larger than the cache goes as soon as its reader is
done). Several worker processes of one machine share the cache; each removal takes the lock exclusively, without
waiting.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

from django.conf import settings

from diagnoses import object_store

LOCK_SUFFIX = ".lock"


def cache_root() -> Path:
    return Path(settings.FAULTLINE_BUNDLE_ROOT) / ".cache"


@contextlib.contextmanager
def held(relative: str, stage) -> Iterator[Path]:
    """The bundle at ``relative`` as a local directory, fetched when not cached, for as long as the block runs.
    ``stage()`` gives a fresh folder on the same file system to fetch into."""
    entry = _entry(relative)
    entry.parent.mkdir(parents=True, exist_ok=True)
    with _locked(entry, fcntl.LOCK_SH) as lock:
        if not entry.is_dir():
            staging = stage()
            try:
                object_store.download(relative, staging / "bundle")
                with contextlib.suppress(OSError):  # another process of this machine fetched it first
                    os.rename(staging / "bundle", entry)
            finally:
                shutil.rmtree(staging, ignore_errors=True)
        os.utime(lock)
        yield entry
    trim()


def trim(limit: int | None = None) -> list[Path]:
    """Remove least recently used bundles nobody holds until the cache holds at most ``limit`` bytes
    (``FAULTLINE_BUNDLE_CACHE_BYTES``). Returns the bundles removed."""
    limit = settings.FAULTLINE_BUNDLE_CACHE_BYTES if limit is None else limit
    entries = []
    for lock in cache_root().glob(f"*{LOCK_SUFFIX}"):
        entry = lock.with_name(lock.name.removesuffix(LOCK_SUFFIX))
        with contextlib.suppress(FileNotFoundError):
            entries.append((lock.stat().st_mtime, entry, _size(entry)))
    total = sum(size for _, _, size in entries)
    removed = []
    for _, entry, size in sorted(entries, key=lambda item: item[0]):
        if total <= limit:
            break
        with _locked(entry, fcntl.LOCK_EX | fcntl.LOCK_NB, missing_ok=True) as lock:
            if lock is None:
                continue  # in use, or gone
            shutil.rmtree(entry, ignore_errors=True)
            lock.unlink(missing_ok=True)  # after the bundle: whoever locks a new lock file finds no stale bundle
            total -= size
            removed.append(entry)
    return removed


def forget(relative: str) -> None:
    """Drop the cached copy of a bundle that is being removed from the store (waits for its readers)."""
    entry = _entry(relative)
    if not entry.parent.is_dir():
        return
    with _locked(entry, fcntl.LOCK_EX) as lock:
        shutil.rmtree(entry, ignore_errors=True)
        lock.unlink(missing_ok=True)


def _entry(relative: str) -> Path:
    return cache_root() / relative.replace("/", "-")


@contextlib.contextmanager
def _locked(entry: Path, how: int, *, missing_ok: bool = False) -> Iterator[Path | None]:
    """Hold ``how`` on the entry's lock file; the file is opened again when it was replaced while waiting (a removal
    unlinks it). Yields None when a non-blocking lock is taken elsewhere, or (``missing_ok``) the file is gone."""
    lock = entry.with_name(entry.name + LOCK_SUFFIX)
    while True:
        if missing_ok and not lock.exists():
            yield None
            return
        with open(lock, "a") as handle:
            try:
                fcntl.flock(handle, how)
            except BlockingIOError:
                yield None
                return
            try:
                same = os.stat(lock).st_ino == os.fstat(handle.fileno()).st_ino
            except FileNotFoundError:
                same = False
            if same:
                yield lock
                return


def _size(entry: Path) -> int:
    total = 0
    for here, _subdirs, names in os.walk(entry):
        for name in names:
            with contextlib.suppress(FileNotFoundError):
                total += os.lstat(os.path.join(here, name)).st_size
    return total
