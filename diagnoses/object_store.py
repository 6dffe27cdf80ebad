"""Bundles in an S3-compatible object store (``FAULTLINE_BUNDLE_STORE=s3://BUCKET/PREFIX``), through boto3.

A bundle at ``3f/3f2a...`` is the objects ``PREFIX3f/3f2a.../<its files>``. Each web and worker machine keeps
its staging folder and a bounded cache under its own ``FAULTLINE_BUNDLE_ROOT`` (``bundle_cache``); this module
only moves files between them and the store. boto3 finds the credentials where it always does (the
``AWS_ACCESS_KEY_ID``/``AWS_SECRET_ACCESS_KEY`` variables, a profile, an instance role); the endpoint of a store that
is not Amazon's (MinIO, Ceph, ...) is ``FAULTLINE_S3_ENDPOINT_URL``.

A store that cannot be reached, times out or answers 5xx (after boto3's own retries) raises ``StoreUnavailable``; one
that says it is out of room raises ``StoreFull``: the API answers them 503 and 507, a worker retries later.
"""

from __future__ import annotations

import contextlib
import io
import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError
from django.conf import settings

FULL_CODES = frozenset({"XMinioStorageFull", "InsufficientStorage", "QuotaExceeded"})
MISSING_CODES = frozenset({"NoSuchKey", "404", "NotFound"})
_clients: dict[tuple, object] = {}


class StoreUnavailable(Exception):
    """The object store cannot be reached or fails for now: try again later."""


class StoreFull(Exception):
    """The bundle store has no room left: try again once some is freed."""


@dataclass(frozen=True)
class Location:
    bucket: str
    prefix: str  # "" or ending in "/"


def location() -> Location:
    """The bucket and key prefix of ``FAULTLINE_BUNDLE_STORE`` (``s3://BUCKET`` or ``s3://BUCKET/PREFIX``)."""
    url = settings.FAULTLINE_BUNDLE_STORE
    bucket, _, prefix = url.removeprefix("s3://").partition("/")
    prefix = prefix.strip("/")
    return Location(bucket, f"{prefix}/" if prefix else "")


def client():
    """A boto3 client for this process (clients are not shared across a fork: the key holds the process id)."""
    key = (os.getpid(), settings.FAULTLINE_S3_ENDPOINT_URL, settings.FAULTLINE_S3_REGION)
    if key not in _clients:
        config = Config(
            connect_timeout=settings.FAULTLINE_S3_TIMEOUT,
            read_timeout=settings.FAULTLINE_S3_TIMEOUT,
            retries={"max_attempts": 3, "mode": "standard"},
        )
        _clients[key] = boto3.client(
            "s3", endpoint_url=settings.FAULTLINE_S3_ENDPOINT_URL or None, region_name=settings.FAULTLINE_S3_REGION,
            config=config,
        )  # fmt: skip
    return _clients[key]


def failure(exc: Exception, doing: str) -> Exception:
    """The store's error as ``StoreFull`` or ``StoreUnavailable`` (the message names what was being done)."""
    if isinstance(exc, ClientError):
        code = exc.response.get("Error", {}).get("Code", "")
        status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0)
        if code in FULL_CODES or status == 507:
            return StoreFull(f"the object store is full ({doing}: {code})")
        return StoreUnavailable(f"the object store refused {doing}: {code or status}")
    return StoreUnavailable(f"the object store cannot be reached ({doing}: {type(exc).__name__})")


def _key(relative: str, name: str = "") -> str:
    return f"{location().prefix}{relative}/{name}"


def _objects(relative: str) -> Iterator[dict]:
    """The bundle's objects, by key (each with ``Key``, ``Size``, ``LastModified``)."""
    paginator = client().get_paginator("list_objects_v2")
    try:
        for page in paginator.paginate(Bucket=location().bucket, Prefix=_key(relative)):
            yield from page.get("Contents", ())
    except (BotoCoreError, ClientError) as exc:
        raise failure(exc, f"listing bundle {relative}") from exc


def files(relative: str) -> list[tuple[str, int, float]]:
    """The bundle's files: (path inside the bundle, size, modification time), by path."""
    start = len(_key(relative))
    return [(item["Key"][start:], item["Size"], item["LastModified"].timestamp()) for item in _objects(relative)]


def exists(relative: str) -> bool:
    try:
        found = client().list_objects_v2(Bucket=location().bucket, Prefix=_key(relative), MaxKeys=1)
    except (BotoCoreError, ClientError) as exc:
        raise failure(exc, f"looking for bundle {relative}") from exc
    return found.get("KeyCount", 0) > 0


def upload(directory: Path, relative: str) -> None:
    """Put the bundle directory's files at ``relative``; on failure, remove what was put and raise."""
    try:
        for here, subdirs, names in os.walk(directory):
            subdirs.sort()
            for name in sorted(names):
                file = Path(here) / name
                client().upload_file(
                    str(file), location().bucket, _key(relative, file.relative_to(directory).as_posix())
                )
    except (BotoCoreError, ClientError) as exc:
        error = failure(exc, f"storing bundle {relative}")
        with contextlib.suppress(StoreUnavailable, StoreFull):
            remove(relative)
        raise error from exc


def download(relative: str, destination: Path) -> None:
    """Write the bundle's files under ``destination`` (created; removed again when this fails)."""
    destination.mkdir(parents=True, exist_ok=True)
    try:
        for path, _size, _mtime in files(relative):
            target = destination / _safe(path)
            target.parent.mkdir(parents=True, exist_ok=True)
            client().download_file(location().bucket, _key(relative, path), str(target))
    except (BotoCoreError, ClientError) as exc:
        shutil.rmtree(destination, ignore_errors=True)
        raise failure(exc, f"fetching bundle {relative}") from exc
    except BaseException:
        shutil.rmtree(destination, ignore_errors=True)
        raise


def open_file(relative: str, path: str):
    """One file of the bundle as a buffered binary stream (``readline`` works), or None when there is none."""
    try:
        found = client().get_object(Bucket=location().bucket, Key=_key(relative, str(_safe(path))))
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code", "") in MISSING_CODES:
            return None
        raise failure(exc, f"reading {path} of bundle {relative}") from exc
    except BotoCoreError as exc:
        raise failure(exc, f"reading {path} of bundle {relative}") from exc
    return io.BufferedReader(_Body(found["Body"]), 1 << 20)


def remove(relative: str) -> None:
    keys = [{"Key": item["Key"]} for item in _objects(relative)]
    try:
        for first in range(0, len(keys), 1000):
            client().delete_objects(Bucket=location().bucket, Delete={"Objects": keys[first : first + 1000]})
    except (BotoCoreError, ClientError) as exc:
        raise failure(exc, f"removing bundle {relative}") from exc


def bucket_ensure() -> None:
    """Create the bucket when it does not exist (``manage.py bundle_store --create-bucket``, the tests)."""
    try:
        client().head_bucket(Bucket=location().bucket)
    except ClientError:
        client().create_bucket(Bucket=location().bucket)


def _safe(path: str) -> PurePosixPath:
    """A path inside a bundle as stored: relative, no '..' (keys come from our own uploads; this keeps it so)."""
    parts = PurePosixPath(path).parts
    if not parts or PurePosixPath(path).is_absolute() or ".." in parts:
        raise ValueError(f"{path}: not a path inside a bundle")
    return PurePosixPath(*parts)


class _Body(io.RawIOBase):
    """boto3's streaming body as a raw stream, so that ``io.BufferedReader`` can read lines of it."""

    def __init__(self, body):
        self.body = body

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        try:
            data = self.body.read(len(buffer))
        except (BotoCoreError, OSError) as exc:
            raise StoreUnavailable(f"the object store stopped answering ({type(exc).__name__})") from exc
        buffer[: len(data)] = data
        return len(data)

    def close(self) -> None:
        self.body.close()
        super().close()
