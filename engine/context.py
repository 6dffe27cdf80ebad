"""What the engine reads: everything known about one attempt (ARCHITECTURE.md, "AttemptContext").

Connectors build these objects; the engine never touches a database, the network or the clock.
Log streams are read lazily (``LogStream.open``) so that a bundle of any size is streamed, never
loaded whole.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import BinaryIO

SYSTEM_STREAMS = frozenset({"syslog", "kern", "messages", "dmesg", "journal"})
SCHEDULER_STREAMS = frozenset({"slurmd", "slurmctld", "kubelet"})

STREAM_KINDS = ("system", "app", "scheduler", "events", "metrics")
# The environment variables a connector records of a job (``Attempt.environment``), and the ones the comparison with
# the last good attempt reads: the communication and CUDA settings; any other variable may hold a secret.
ENVIRONMENT_PREFIXES = ("NCCL_", "TORCH_", "CUDA_")


def stream_kind(name: str) -> str:
    """The kind of a log stream from its name (docs/bundles.md)."""
    if name in SYSTEM_STREAMS:
        return "system"
    if name in SCHEDULER_STREAMS:
        return "scheduler"
    return "app"


class TaskRanks(Mapping):
    """The ranks of ``tasks_per_node`` tasks on each node, in node order (rank r runs on node
    r // per_node): computed when asked, never expanded, so a huge ``tasks_per_node`` costs nothing."""

    def __init__(self, nodes: tuple[str, ...], per_node: int):
        self.nodes = nodes
        self.per_node = per_node

    def __getitem__(self, rank: int) -> str:
        if isinstance(rank, int) and 0 <= rank < len(self):
            return self.nodes[rank // self.per_node]
        raise KeyError(rank)

    def __len__(self) -> int:
        return len(self.nodes) * self.per_node

    def __iter__(self):
        return iter(range(len(self)))

    def __repr__(self) -> str:
        return f"TaskRanks({len(self.nodes)} nodes x {self.per_node})"


@dataclass(frozen=True)
class Attempt:
    """The scheduler's record of one attempt (``attempt.json``)."""

    cluster: str
    scheduler: str
    job_id: str
    attempt: int
    nodes: tuple[str, ...]
    start: datetime
    end: datetime
    state: str
    name: str = ""
    user: str = ""
    exit_code: str = ""
    reason: str = ""
    ranks: Mapping[int, str] = field(default_factory=dict)  # a dict, or TaskRanks
    timezone: str = "UTC"
    image: str = ""  # the container image it ran
    environment: Mapping[str, str] = field(default_factory=dict)  # of the job (ENVIRONMENT_PREFIXES, as gathered)


@dataclass(frozen=True)
class LogStream:
    """One log stream: a node's stream (``node`` set) or workload-level output (``node`` None).

    ``ref`` is the stream's path inside the bundle (``logs/node02/syslog.log``); evidence points at
    ``ref:line``. ``opener`` returns a binary file object positioned at the start of the stream.
    """

    ref: str
    name: str
    node: str | None
    opener: Callable[[], BinaryIO]

    @property
    def kind(self) -> str:
        return stream_kind(self.name)

    @classmethod
    def from_path(cls, ref: str, name: str, node: str | None, path: Path) -> LogStream:
        return cls(ref=ref, name=name, node=node, opener=lambda: open(path, "rb"))  # noqa: SIM115

    @classmethod
    def from_bytes(cls, ref: str, name: str, node: str | None, data: bytes) -> LogStream:
        return cls(ref=ref, name=name, node=node, opener=lambda: io.BytesIO(data))


@dataclass(frozen=True)
class SchedulerEvent:
    """A scheduler or Kubernetes event (``events/*.json``), flattened."""

    time: datetime | None
    node: str | None
    source: str
    reason: str
    message: str
    ref: str


@dataclass(frozen=True)
class MetricSeries:
    """One Prometheus series over the attempt's window: labels and (unix time, value) samples."""

    name: str
    labels: dict[str, str]
    samples: tuple[tuple[float, float], ...]
    node: str | None
    ref: str


@dataclass(frozen=True)
class TraceFile:
    """One file of a bundle's traces, as the program that wrote it left it: a Flight Recorder dump
    (``traces/flight_recorder/rank_3``). ``opener`` returns a binary file object at its start; the
    engine reads it when it analyses the attempt (``engine.flight_recorder.attempt``)."""

    ref: str
    opener: Callable[[], BinaryIO]

    @property
    def name(self) -> str:
        return self.ref.rsplit("/", 1)[-1]

    @classmethod
    def from_path(cls, ref: str, path: Path) -> TraceFile:
        return cls(ref=ref, opener=lambda: open(path, "rb"))  # noqa: SIM115

    @classmethod
    def from_bytes(cls, ref: str, data: bytes) -> TraceFile:
        return cls(ref=ref, opener=lambda: io.BytesIO(data))


@dataclass(frozen=True)
class SourceReport:
    """What a connector could or could not gather, reported into the diagnosis's ``sources``."""

    name: str
    kind: str
    status: str  # ok | partial | missing | unreadable | error
    detail: str


@dataclass(frozen=True)
class NodeVerdict:
    """A verdict of record that named one of the attempt's nodes, of an earlier attempt in the history's window
    (``history/nodes.json``, docs/bundles.md)."""

    node: str
    cluster: str
    job_id: str
    attempt: int
    end: datetime  # when that attempt ended
    outcome: str
    domain: str
    subdomain: str
    reviewed: bool  # a person's verdict, not only the engine's
    ref: str  # history/nodes.json#<index>

    @property
    def name(self) -> str:
        return f"{self.cluster}/{self.job_id}#{self.attempt}"


@dataclass(frozen=True)
class PreviousAttempt:
    """An earlier attempt of the same job with its verdict of record (``history/attempts.json``)."""

    attempt: int
    start: datetime
    end: datetime
    state: str
    outcome: str
    domain: str
    subdomain: str
    nodes: tuple[str, ...]  # the nodes its verdict names
    reviewed: bool
    ref: str


@dataclass(frozen=True)
class History:
    """What the store knew when the attempt was gathered: its nodes' verdicts of record in the window before it
    started, and its job's previous attempts. Input like the logs: the same bundle gives the same diagnosis."""

    window_days: int
    nodes: tuple[NodeVerdict, ...] = ()
    attempts: tuple[PreviousAttempt, ...] = ()


@dataclass(frozen=True)
class AttemptContext:
    attempt: Attempt
    streams: tuple[LogStream, ...] = ()
    events: tuple[SchedulerEvent, ...] = ()
    metrics: tuple[MetricSeries, ...] = ()
    reports: tuple[SourceReport, ...] = ()
    flight_recorder: tuple[TraceFile, ...] = ()  # PyTorch Flight Recorder dumps, one file per rank
    history: History | None = None  # history/ when the bundle has it
