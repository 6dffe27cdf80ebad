"""Backups of the store: the database and the bundles it points to, as one consistent pair in a folder
(``manage.py backup DIR``, ``manage.py restore DIR``; docs/operations.md, "Backups").

PostgreSQL is dumped with ``pg_dump --format=custom`` from a snapshot exported by a repeatable-read transaction; the
bundles copied are the ones that snapshot's attempts and regression cases name, so the pair is consistent however
much is written meanwhile (bundles never change once placed; a bundle removed by retention between the snapshot
and its copy is listed as missing). SQLite is copied with its online backup API. Each bundle file's SHA-256 is kept
in ``manifest.json`` and checked on restore.

The folder: ``manifest.json``, ``database.dump`` (or ``database.sqlite3``), ``bundles/<place>/...``. A restore puts
the bundles back in the configured store (the local folder or the object store, whichever this site uses now) and
then replaces the database's content with the dump's (``pg_restore --clean --single-transaction``).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3
import subprocess
from pathlib import Path

from django.db import connection, connections

from diagnoses import bundle_store

FORMAT = 1
DUMP = {"postgresql": "database.dump", "sqlite": "database.sqlite3"}
LOCATIONS = "SELECT bundle FROM diagnoses_attempt UNION SELECT bundle FROM workbench_regressioncase"


class BackupError(Exception):
    """The backup or restore cannot be made; the message says why."""


def backup(folder: Path) -> dict:
    """Write the database and its bundles to ``folder`` (new or empty). Returns the manifest."""
    folder = Path(folder)
    if folder.exists() and any(folder.iterdir()):
        raise BackupError(f"{folder}: not empty (a backup goes to a new folder)")
    folder.mkdir(parents=True, exist_ok=True)
    vendor = connection.vendor
    if vendor == "postgresql":
        locations = _dump_postgresql(folder / DUMP[vendor])
    elif vendor == "sqlite":
        locations = _dump_sqlite(folder / DUMP[vendor])
    else:
        raise BackupError(f"backups of a {vendor} database are not supported")
    bundles, missing = {}, []
    for relative in sorted(locations):
        target = folder / "bundles" / relative
        if not bundle_store.exists(relative):
            missing.append(relative)  # not gathered yet, or removed after the retention period
            continue
        bundle_store.export(relative, target)
        bundles[relative] = _digests(target)
    manifest = {"format": FORMAT, "database": vendor, "bundles": bundles, "missing": missing}
    (folder / "manifest.json").write_text(json.dumps(manifest, indent=1, sort_keys=True))
    return manifest


def restore(folder: Path) -> dict:
    """Put the backup in ``folder`` back: its bundles into the store, then its database content in place of the
    current one. Returns the manifest."""
    folder = Path(folder)
    try:
        manifest = json.loads((folder / "manifest.json").read_text())
    except (OSError, ValueError) as exc:
        raise BackupError(f"{folder / 'manifest.json'}: not a readable backup manifest ({exc})") from None
    if manifest.get("format") != FORMAT or manifest.get("database") != connection.vendor:
        raise BackupError(
            f"{folder}: a backup of a {manifest.get('database')} database (format {manifest.get('format')}); "
            f"this site's database is {connection.vendor}"
        )
    for relative, digests in manifest["bundles"].items():
        source = folder / "bundles" / relative
        if _digests(source) != digests:
            raise BackupError(f"{source}: its files differ from the manifest's checksums: nothing was restored")
    for relative in manifest["bundles"]:
        if bundle_store.exists(relative):
            continue  # a bundle never changes once placed: the one there is this one
        staging = bundle_store.stage()
        try:
            bundle_store.copy_tree(folder / "bundles" / relative, staging / "bundle")
            bundle_store.place(staging / "bundle", relative)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    connections.close_all()
    if connection.vendor == "postgresql":
        _restore_postgresql(folder / DUMP["postgresql"])
    else:
        _restore_sqlite(folder / DUMP["sqlite"])
    return manifest


def _dump_postgresql(file: Path) -> list[str]:
    with connection.cursor() as cursor:
        cursor.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
        try:
            cursor.execute("SELECT pg_export_snapshot()")
            snapshot = cursor.fetchone()[0]
            _run(["pg_dump", "--format=custom", f"--snapshot={snapshot}", f"--file={file}", *_connection_args()])
            cursor.execute(LOCATIONS)
            return [row[0] for row in cursor.fetchall()]
        finally:
            cursor.execute("COMMIT")


def _restore_postgresql(file: Path) -> None:
    _run(["pg_restore", "--clean", "--if-exists", "--no-owner", "--single-transaction", *_connection_args(), str(file)])


def _dump_sqlite(file: Path) -> list[str]:
    connection.ensure_connection()
    with sqlite3.connect(file) as copy:
        connection.connection.backup(copy)
        return [row[0] for row in copy.execute(LOCATIONS)]


def _restore_sqlite(file: Path) -> None:
    connection.ensure_connection()
    with sqlite3.connect(file) as source:
        source.backup(connection.connection)


def _connection_args() -> list[str]:
    settings = connection.settings_dict
    args = [f"--dbname={settings['NAME']}", f"--username={settings['USER'] or 'postgres'}"]
    if settings["HOST"]:
        args.append(f"--host={settings['HOST']}")
    if settings["PORT"]:
        args.append(f"--port={settings['PORT']}")
    return args


def _run(command: list[str]) -> None:
    environment = {**os.environ, "PGPASSWORD": connection.settings_dict["PASSWORD"] or ""}
    done = subprocess.run(command, env=environment, capture_output=True, text=True)
    if done.returncode != 0:
        raise BackupError(f"{command[0]} failed ({done.returncode}): {done.stderr.strip()[-2000:]}")


def _digests(bundle: Path) -> dict[str, str]:
    """Each file of a bundle directory: its SHA-256, by its path inside the bundle."""
    digests = {}
    for here, _subdirs, names in os.walk(bundle):
        for name in names:
            file = Path(here) / name
            with open(file, "rb") as stream:
                digests[file.relative_to(bundle).as_posix()] = hashlib.file_digest(stream, "sha256").hexdigest()
    return dict(sorted(digests.items()))
