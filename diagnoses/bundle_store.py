"""The bundle store: one directory per attempt under ``FAULTLINE_BUNDLE_ROOT`` (docs/bundles.md), or, with
``FAULTLINE_BUNDLE_STORE=s3://BUCKET/PREFIX``, one set of objects per attempt in an S3-compatible object store
(``object_store``), shared by every web and worker machine.

A bundle arrives as a directory or as a ``.tar.gz`` of one. It is first staged in ``.incoming/`` under
the root (the same file system, so placing it is an atomic rename; with an object store, an upload), checked, and
placed only when its attempt's rows are written; nothing half-extracted is ever visible at a bundle's place. The
engine reads a bundle as a local directory (``local``): with an object store, a copy in the machine's bounded cache
(``bundle_cache``).

Archives are read as a stream with limits on the compressed size, the bytes written and the number
of members; members must be plain files or directories with relative paths inside the bundle.
"""

from __future__ import annotations

import contextlib
import gzip
import os
import shutil
import tarfile
import tempfile
import time
import uuid
import zlib
from collections.abc import Iterator
from pathlib import Path, PurePosixPath

from django.conf import settings

from diagnoses import bundle_cache, object_store
from diagnoses.columns import DoesNotFit, attempt_check
from engine.bundle import ATTEMPT_FILE, BundleError, parse_attempt, write_bundle
from engine.context import Attempt, AttemptContext
from engine.limits import TooLarge, load_json
from rules.engine_limits import bundle_limits

CHUNK = 1 << 20
HEADER_ALLOWANCE = 1024  # tar header and padding bytes allowed per member beyond its content
NAME_PART_BYTES = 255  # what a file system allows for one file name


class BundleRejected(Exception):
    """The bundle cannot be stored; the message names the problem (member, file, field)."""

    code = "invalid_bundle"


class BundleTooLarge(BundleRejected):
    code = "too_large"


def root() -> Path:
    return Path(settings.FAULTLINE_BUNDLE_ROOT)


def remote() -> bool:
    """Whether bundles live in an object store (else in the folder ``FAULTLINE_BUNDLE_ROOT``)."""
    return bool(settings.FAULTLINE_BUNDLE_STORE)


def path_of(relative: str) -> Path:
    """Where a bundle lives in the local folder (only with no object store: else read it through ``local``)."""
    return root() / relative


@contextlib.contextmanager
def local(relative: str) -> Iterator[Path]:
    """The stored bundle as a local directory for as long as the block runs (with an object store, fetched into the
    machine's cache and held there)."""
    if not remote():
        yield path_of(relative)
        return
    with bundle_cache.held(relative, stage) as path:
        yield path


def exists(relative: str) -> bool:
    return object_store.exists(relative) if remote() else path_of(relative).is_dir()


def open_file(relative: str, path: str):
    """A file of the stored bundle (``logs/node02/syslog.log``) opened for reading in binary, or None when the bundle
    has no such file or the path leaves it."""
    if ".." in PurePosixPath(path).parts or PurePosixPath(path).is_absolute() or "\0" in path:
        return None
    if remote():
        return object_store.open_file(relative, path)
    bundle = path_of(relative).resolve()
    file = (bundle / path).resolve()
    if not file.is_relative_to(bundle) or not file.is_file():
        return None
    return open(file, "rb")  # noqa: SIM115 (the caller closes it)


def stage() -> Path:
    """A fresh, empty staging directory on the bundle root's file system."""
    incoming = root() / ".incoming"
    incoming.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(dir=incoming))


def staging_sweep(*, older_than: float) -> int:
    """Remove what a killed request or worker left in the staging folder more than ``older_than`` seconds ago
    (a live upload touches its folder as it writes). Returns the entries removed."""
    incoming = root() / ".incoming"
    if not incoming.is_dir():
        return 0
    removed = 0
    cutoff = time.time() - older_than
    for entry in incoming.iterdir():
        try:
            if entry.lstat().st_mtime >= cutoff:
                continue
        except FileNotFoundError:
            continue
        if entry.is_dir():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            entry.unlink(missing_ok=True)
        removed += 1
    return removed


def new_location() -> str:
    """A new bundle's place under the root, e.g. ``3f/3f2a...``."""
    name = uuid.uuid4().hex
    return f"{name[:2]}/{name}"


def place(staged: Path, relative: str) -> None:
    """Move a staged bundle to its place (an atomic rename; with an object store, an upload of its files, removed
    again when it fails: the staged copy is the caller's to remove)."""
    if remote():
        object_store.upload(staged, relative)
        return
    target = path_of(relative)
    for last in (False, True):  # a removal may take the shard folder away between the two (remove, below)
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.rename(staged, target)
            return
        except FileNotFoundError:
            if last or not staged.exists():
                raise


def remove(relative: str) -> None:
    """Remove a bundle, and its shard folder (``3f/``) when it held nothing else: a refused upload leaves nothing."""
    if remote():
        object_store.remove(relative)
        bundle_cache.forget(relative)
        return
    path = path_of(relative)
    shutil.rmtree(path, ignore_errors=True)
    with contextlib.suppress(OSError):  # not empty: other bundles live there
        path.parent.rmdir()


def copy_tree(source: Path, destination: Path) -> None:
    """Copy a bundle directory's files (links and special files are refused)."""
    if not source.is_dir():
        raise BundleRejected(f"{source}: not a directory")
    for directory, subdirs, files in os.walk(source):
        here = Path(directory)
        target = destination / here.relative_to(source)
        target.mkdir(parents=True, exist_ok=True)
        for name in sorted(subdirs + files):
            entry = here / name
            if entry.is_symlink() or not (entry.is_file() or entry.is_dir()):
                raise BundleRejected(f"{entry}: links and special files are not allowed in a bundle")
        for name in files:
            shutil.copyfile(here / name, target / name)


def extract_archive(stream, destination: Path, *, max_bytes: int | None = None, max_files: int | None = None) -> None:
    """Extract the ``.tar.gz`` read from ``stream`` (compressed size already checked) into ``destination``."""
    max_bytes = settings.FAULTLINE_BUNDLE_MAX_BYTES if max_bytes is None else max_bytes
    max_files = settings.FAULTLINE_BUNDLE_MAX_FILES if max_files is None else max_files
    expanded = LimitedReader(
        gzip.GzipFile(fileobj=stream, mode="rb"),
        max_bytes + max_files * HEADER_ALLOWANCE,
        f"the archive expands to more than {max_bytes:,} bytes",
    )
    written = files = 0
    try:
        with tarfile.open(fileobj=expanded, mode="r|") as archive:
            for member in archive:
                files += 1
                if files > max_files:
                    raise BundleTooLarge(f"the archive has more than {max_files:,} members")
                relative = _member_path(member.name, settings.FAULTLINE_BUNDLE_MAX_NAME)
                if member.isdir():
                    (destination / relative).mkdir(parents=True, exist_ok=True)
                    continue
                if not member.isreg():
                    raise BundleRejected(f"{member.name}: links and special files are not allowed in a bundle")
                written += member.size
                if written > max_bytes:
                    raise BundleTooLarge(f"the archive expands to more than {max_bytes:,} bytes")
                target = destination / relative
                target.parent.mkdir(parents=True, exist_ok=True)
                source = archive.extractfile(member)
                try:
                    with open(target, "xb") as out:
                        shutil.copyfileobj(source, out, CHUNK)
                except FileExistsError:
                    raise BundleRejected(f"{member.name}: appears twice in the archive") from None
    except (gzip.BadGzipFile, zlib.error):
        raise BundleRejected("not a gzip-compressed archive (send a .tar.gz of the bundle directory)") from None
    except EOFError:
        raise BundleRejected("the archive is truncated") from None
    except tarfile.TarError as exc:
        if files == 0:
            raise BundleRejected("not a tar archive inside the gzip stream (send a .tar.gz)") from None
        raise BundleRejected(f"the archive is damaged after {files} members ({exc})") from None
    except (NotADirectoryError, IsADirectoryError, FileExistsError) as exc:
        raise BundleRejected(f"{_inside(exc.filename, destination)}: a file and a directory of the same name") from None


def _inside(filename, destination: Path) -> str:
    """A path under the staging folder as the archive names it."""
    try:
        return Path(filename).relative_to(destination).as_posix()
    except (TypeError, ValueError):
        return str(filename)


def _member_path(name: str, longest: int) -> PurePosixPath:
    if len(name) > longest:
        raise BundleRejected(f"{name[:80]}...: a member name longer than {longest:,} characters")
    path = PurePosixPath(name)
    for part in path.parts:
        if len(part.encode("utf-8", "surrogateescape")) > NAME_PART_BYTES:
            raise BundleRejected(f"{part[:80]}...: a file name longer than {NAME_PART_BYTES} bytes in a member name")
    if path.is_absolute() or name.startswith("\\") or "\0" in name:
        raise BundleRejected(f"{name}: absolute paths are not allowed in a bundle archive")
    if ".." in path.parts or "\\" in name:
        raise BundleRejected(f"{name}: paths leaving the bundle ('..') are not allowed in a bundle archive")
    parts = [part for part in path.parts if part != "."]
    if not parts:
        return PurePosixPath(".")
    return PurePosixPath(*parts)


class LimitedReader:
    """A read-only stream that refuses to yield more than ``limit`` bytes (``BundleTooLarge(message)``)."""

    def __init__(self, raw, limit: int, message: str):
        self.raw = raw
        self.left = limit
        self.message = message

    def read(self, size: int = -1) -> bytes:
        data = self.raw.read(size if size is not None and size >= 0 else CHUNK)
        self.left -= len(data)
        if self.left < 0:
            raise BundleTooLarge(self.message)
        return data


def upload_too_large() -> str:
    """What refuses an upload past ``FAULTLINE_UPLOAD_MAX_BYTES`` (the API, the upload page and its script alike)."""
    return f"the upload is larger than {settings.FAULTLINE_UPLOAD_MAX_BYTES:,} bytes"


def uploaded_file(upload):
    """The stream of a bundle posted as the multipart field ``bundle`` (``upload``: the field's file, or None), or
    ``BundleRejected`` naming why not: the API and the upload page refuse with the same words."""
    if not hasattr(upload, "read"):
        raise BundleRejected("the multipart field 'bundle' must hold the .tar.gz file")
    if upload.size > settings.FAULTLINE_UPLOAD_MAX_BYTES:
        raise BundleTooLarge(upload_too_large())
    return upload


def locate(extracted: Path) -> Path:
    """The bundle directory inside an extracted archive: its top, or its one top-level directory."""
    if (extracted / ATTEMPT_FILE).is_file():
        return extracted
    entries = [entry for entry in extracted.iterdir() if not entry.name.startswith(".")]
    if len(entries) == 1 and entries[0].is_dir() and (entries[0] / ATTEMPT_FILE).is_file():
        return entries[0]
    raise BundleRejected(f"{ATTEMPT_FILE}: missing (a bundle holds attempt.json at its top)")


def read_attempt(bundle: Path) -> tuple[dict, Attempt]:
    """The bundle's ``attempt.json`` as received and validated (unknown fields are refused)."""
    file = bundle / ATTEMPT_FILE
    if not file.is_file():
        raise BundleRejected(f"{ATTEMPT_FILE}: missing (a bundle holds attempt.json at its top)")
    limits = bundle_limits()
    if file.stat().st_size > limits.json_bytes:
        raise BundleRejected(f"{ATTEMPT_FILE}: larger than {limits.json_bytes:,} bytes")
    try:
        record = load_json(file.read_bytes(), limits)
    except TooLarge as exc:
        raise BundleRejected(f"{ATTEMPT_FILE}: {exc}") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise BundleRejected(f"{ATTEMPT_FILE}: not valid JSON ({exc})") from None
    try:
        parsed = parse_attempt(record, where=ATTEMPT_FILE, strict=True, limits=limits)
        attempt_check(parsed, record)
    except (BundleError, DoesNotFit) as exc:
        raise BundleRejected(str(exc)) from None
    return record, parsed


def store_context(relative: str, context: AttemptContext) -> None:
    """Write what the connectors gathered for an attempt as its bundle at ``relative`` (staged, then
    placed), each log stream and all of them capped (``FAULTLINE_GATHER_*_MAX_BYTES``; a cut is reported
    in the bundle's sources). A bundle already there (another worker gathered it first) is kept."""
    staging = stage()
    try:
        write_bundle(
            context,
            staging / "bundle",
            stream_bytes=settings.FAULTLINE_GATHER_STREAM_MAX_BYTES,
            total_bytes=settings.FAULTLINE_GATHER_MAX_BYTES,
        )
        if remote():
            if not object_store.exists(relative):
                place(staging / "bundle", relative)
            return
        try:
            place(staging / "bundle", relative)
        except OSError:
            if not path_of(relative).is_dir():
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def archive_stream(relative: str, top: str) -> Iterator[bytes]:
    """The stored bundle as a ``.tar.gz`` (its files under the directory ``top``), produced piece by
    piece: a bundle of gigabytes is sent without being held in memory or written to disk."""
    compressor = zlib.compressobj(6, zlib.DEFLATED, 31)  # wbits 31: the gzip format
    for path, size, mtime in _files(relative):
        info = tarfile.TarInfo(f"{top}/{path}")
        info.size, info.mtime, info.mode = size, int(mtime), 0o644
        yield compressor.compress(info.tobuf(format=tarfile.PAX_FORMAT))
        left = size
        source = open_file(relative, path)
        if source is not None:
            with source:
                while left > 0 and (chunk := source.read(min(CHUNK, left))):
                    left -= len(chunk)
                    yield compressor.compress(chunk)
        # a file that shrank (or went) while being read is padded to its announced size, then to a block
        yield compressor.compress(bytes(left + (-size % tarfile.BLOCKSIZE)))
    yield compressor.compress(bytes(2 * tarfile.BLOCKSIZE))  # the end-of-archive marker
    yield compressor.flush()


def _files(relative: str) -> Iterator[tuple[str, int, float]]:
    """The stored bundle's files: (path inside it, size, modification time), directory by directory."""
    if remote():
        yield from object_store.files(relative)
        return
    bundle = path_of(relative)
    for directory, subdirs, files in os.walk(bundle):
        subdirs.sort()
        for name in sorted(files):
            file = Path(directory) / name
            stat = file.stat()
            yield file.relative_to(bundle).as_posix(), stat.st_size, stat.st_mtime


def export(relative: str, destination: Path) -> None:
    """Copy a stored bundle to ``destination`` (which must not exist yet)."""
    if remote():
        object_store.download(relative, destination)
        return
    shutil.copytree(path_of(relative), destination)
