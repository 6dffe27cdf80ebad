"""The one interface every connector implements, its one error type, and the registry of kinds.

Schedulers discover failed attempts; log sources fetch logs and metric sources fetch series for an
attempt's nodes and window. All of them return the engine's context types (``engine.context``)
and raise ``ConnectorError``, whose ``permanent`` flag says whether retrying can help. What a source
gathered, and what it could not, goes into ``SourceReport``s with status ``ok``, ``partial``,
``missing`` or ``error`` and the reason, so the diagnosis shows its gaps.

A connector is built from its configured name and settings (a JSON object): ``build(kind, name,
settings, role=...)`` looks the kind up in ``KINDS`` (or takes a dotted path; ``ALIASES`` keeps the old
names of kinds working) and calls the class.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol, runtime_checkable

from engine.bundle import BundleError, attempt_document, parse_attempt, parse_time
from engine.context import Attempt, AttemptContext, LogStream, MetricSeries, SourceReport


class ConnectorError(Exception):
    """A connector could not gather what it was asked for.

    ``permanent`` is True when retrying cannot help (bad configuration, malformed input) and False for
    transient failures (timeouts, 5xx, 429) that a retry with backoff may cure.
    """

    def __init__(self, message: str, *, permanent: bool = False):
        super().__init__(message)
        self.permanent = permanent


class UnusableKind(ConnectorError):
    """The kind names no connector: unknown, not importable, not a class, or not one of the role asked for."""

    def __init__(self, message: str):
        super().__init__(message, permanent=True)


@dataclass(frozen=True)
class DiscoveredAttempt:
    """One failed attempt found by a scheduler: its record, plus what the scheduler needs to gather it.

    ``extra`` holds scheduler-specific keys (Slurm's StdOut path, a Kueue workload's namespace and
    pods); it is JSON-serialisable, so the pipeline can store a discovered attempt and gather it later.
    """

    attempt: Attempt
    extra: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict:
        """The attempt in ``attempt.json`` form (docs/bundles.md) plus ``extra``."""
        return {**attempt_document(self.attempt), "extra": dict(self.extra)}

    @classmethod
    def from_dict(cls, data: Mapping) -> DiscoveredAttempt:
        document = dict(data)
        extra = document.pop("extra", {}) or {}
        try:
            return cls(attempt=parse_attempt(document, where="discovered attempt"), extra=extra)
        except BundleError as exc:
            raise ConnectorError(str(exc), permanent=True) from None


def record_time(value: object, where: str) -> datetime:
    """An RFC 3339 time of a scheduler's record (or a cursor), as an aware UTC datetime; a permanent
    ``ConnectorError`` naming ``where`` when it is not one."""
    try:
        return parse_time(value, where)
    except BundleError as exc:
        raise ConnectorError(str(exc), permanent=True) from None


@runtime_checkable
class Scheduler(Protocol):
    """Finds failed attempts and gathers what the scheduler itself knows of one (job output, events).

    ``skipped`` lists the records that the last ``discover`` call could not turn into attempts, each
    with the reason, for the cluster's status panel.
    """

    name: str
    skipped: list[str]

    def discover(self, cursor: str | None) -> tuple[list[DiscoveredAttempt], str | None]:
        """Failed attempts that ended since ``cursor`` (None: the configured look-back), and the new cursor.

        An attempt may be returned again by a later poll; the pipeline deduplicates on
        (cluster, job_id, attempt).
        """
        ...

    def attempt_context(self, discovered: DiscoveredAttempt) -> AttemptContext:
        """The attempt with its job output, scheduler events and reports of what was not available."""
        ...


@runtime_checkable
class LogSource(Protocol):
    name: str

    def fetch_logs(
        self, nodes: Sequence[str], start: datetime, end: datetime
    ) -> tuple[list[LogStream], list[SourceReport]]: ...


@runtime_checkable
class MetricSource(Protocol):
    name: str

    def fetch_metrics(
        self, nodes: Sequence[str], start: datetime, end: datetime
    ) -> tuple[list[MetricSeries], list[SourceReport]]: ...


@runtime_checkable
class NodeControl(Protocol):
    """A scheduler that can take a node out of service and give it back (the hand-offs' drains): Slurm's
    ``scontrol update NodeName=... State=DRAIN|RESUME``, Kubernetes' cordon. Each returns the scheduler's answer
    (the node's state after the command) and raises ``ConnectorError``."""

    def drain_node(self, node: str, reason: str) -> str: ...

    def resume_node(self, node: str) -> str: ...


# kind -> (role, dotted path of the class). A kind not listed here may be given as a dotted path.
KINDS: dict[str, tuple[str, str]] = {
    "slurm": ("scheduler", "connectors.slurm.scheduler.SlurmScheduler"),
    "kueue": ("scheduler", "connectors.kubernetes.kueue.KueueScheduler"),
    "folder": ("scheduler", "connectors.folder.WatchedFolder"),
    "demo": ("scheduler", "connectors.demo.DemoScheduler"),  # a watched folder that records drains: make run's demo
    "logfiles": ("logs", "connectors.logfiles.LogFileSource"),
    "loki": ("logs", "connectors.loki.source.LokiLogSource"),
    "prometheus": ("metrics", "connectors.prometheus.source.PrometheusMetricSource"),
}
# The names these kinds had before (still accepted; a configuration is stored under the new name).
ALIASES = {"bundles": "folder", "files": "logfiles"}
ROLES = {"scheduler": Scheduler, "logs": LogSource, "metrics": MetricSource}


def canonical_kind(kind: str) -> str:
    """The kind's name in ``KINDS`` when ``kind`` is an old name of it (``ALIASES``), else ``kind``."""
    return ALIASES.get(kind, kind)


def connector_class(kind: str) -> type:
    """The class of a connector kind (a name in ``KINDS`` or a dotted path ``package.module.Class``)."""
    kind = canonical_kind(kind)
    path = KINDS[kind][1] if kind in KINDS else kind
    module_name, _, class_name = path.rpartition(".")
    if not module_name:
        raise UnusableKind(f"unknown connector kind {kind!r} (known: {', '.join(sorted(KINDS))})")
    try:
        found = getattr(importlib.import_module(module_name), class_name)
    except (ImportError, AttributeError) as exc:
        raise UnusableKind(f"connector kind {kind!r}: cannot import {path} ({exc})") from None
    if not isinstance(found, type):
        raise UnusableKind(f"connector kind {kind!r}: {path} is not a class")
    return found


def build(kind: str, name: str, settings: Mapping, *, role: str):
    """A connector of ``kind`` named ``name`` built from its settings. ``role`` (``scheduler``, ``logs`` or
    ``metrics``) is what it must be: a class without that role's methods is refused before it is called."""
    cls = connector_class(kind)
    methods = [method for method, value in vars(ROLES[role]).items() if callable(value) and not method.startswith("_")]
    if not all(callable(getattr(cls, method, None)) for method in methods):
        raise UnusableKind(f"{kind!r} is not a {role} connector (it lacks {', '.join(methods)})")
    return cls(name, settings)
