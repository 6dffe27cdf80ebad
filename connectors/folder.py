"""A watched folder of bundles as a scheduler: any system that can write a bundle directory hands its
attempts over by copying them in (``scan_folder``, ``WatchedFolder``; the ``folder`` kind).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Collection, Mapping
from pathlib import Path

from connectors.base import ConnectorError, DiscoveredAttempt
from connectors.settings_reader import Settings
from engine.bundle import ATTEMPT_FILE, BundleError, load_bundle, parse_attempt
from engine.context import AttemptContext
from engine.limits import DEFAULT_LIMITS, load_json


def scan_folder(folder: str | Path, seen: Collection[str], *, settle: float, now: float) -> list[Path]:
    """The complete bundle directories of a watched folder that are not in ``seen``, by name.

    A bundle is complete when its ``attempt.json`` exists and nothing in the directory has changed for
    ``settle`` seconds before ``now`` (a copy in progress keeps touching it). Hidden entries are skipped.
    """
    root = Path(folder)
    if not root.is_dir():
        raise ConnectorError(f"{root}: watched folder is not a directory", permanent=True)
    found = []
    for entry in sorted(root.iterdir()):
        if entry.name in seen or entry.name.startswith(".") or not entry.is_dir():
            continue
        if not (entry / ATTEMPT_FILE).is_file():
            continue
        changed = _last_change(entry)
        if changed is not None and now - changed >= settle:
            found.append(entry)
    return found


def _last_change(directory: Path) -> float | None:
    """The latest modification time of ``directory`` and everything in it (None if it vanished)."""
    try:
        latest = directory.stat().st_mtime
        for parent, dirs, files in os.walk(directory):
            for name in (*dirs, *files):
                latest = max(latest, os.lstat(os.path.join(parent, name)).st_mtime)
    except FileNotFoundError:
        return None
    return latest


class WatchedFolder:
    """A watched folder as a scheduler: each new complete bundle in it is one discovered attempt.

    Settings: ``path`` (the folder), ``settle_seconds`` (default 30), ``cluster`` (when set, a bundle
    naming another cluster is skipped). The cursor is the JSON list of the names already seen that are
    still in the folder (a bundle removed from it is forgotten; put back, it is found again and, already
    stored, skipped). A
    bundle whose ``attempt.json`` is unusable is seen once and listed in ``skipped``, never retried
    silently forever.
    """

    def __init__(self, name: str, settings: Mapping):
        self.name = name
        reader = Settings(name, settings)
        self.path = Path(reader.text("path", required=True))
        self.settle = reader.number("settle_seconds", 30.0)
        self.cluster = reader.text("cluster")
        reader.finish()
        self.skipped: list[str] = []

    def discover(self, cursor: str | None) -> tuple[list[DiscoveredAttempt], str | None]:
        seen = set(_seen_names(cursor))
        found, self.skipped = [], []
        for bundle in scan_folder(self.path, seen, settle=self.settle, now=time.time()):
            seen.add(bundle.name)
            try:
                attempt = parse_attempt(
                    load_json((bundle / ATTEMPT_FILE).read_bytes(), DEFAULT_LIMITS), where=str(bundle)
                )
            except (OSError, ValueError, BundleError) as exc:
                self.skipped.append(f"{bundle}: {exc}")
                continue
            if self.cluster and attempt.cluster != self.cluster:
                self.skipped.append(f"{bundle}: names cluster {attempt.cluster!r}; this folder is {self.cluster!r}'s")
                continue
            found.append(DiscoveredAttempt(attempt=attempt, extra={"bundle": str(bundle)}))
        # the cursor forgets the bundles no longer in the folder: it stays as long as the folder's listing
        present = {entry.name for entry in self.path.iterdir()}
        return found, json.dumps(sorted(seen & present))

    def attempt_context(self, discovered: DiscoveredAttempt) -> AttemptContext:
        try:
            return load_bundle(discovered.extra["bundle"])
        except BundleError as exc:
            raise ConnectorError(str(exc), permanent=True) from None


def _seen_names(cursor: str | None) -> list[str]:
    if not cursor:
        return []
    try:
        names = json.loads(cursor)
    except ValueError:
        names = None
    if not isinstance(names, list) or not all(isinstance(name, str) for name in names):
        raise ConnectorError(f"bundle folder cursor is not a JSON list of names: {cursor[:80]!r}", permanent=True)
    return names
