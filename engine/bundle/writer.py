"""Write an AttemptContext as a bundle directory (docs/bundles.md): the inverse of ``load_bundle``.

What the connectors gathered for a discovered attempt is written once into the bundle store; from then
on the bundle is the one source of truth (analysis, evidence lines, ``export-bundle``). Each log stream
goes to its ref (``logs/node02/syslog.log``), events and metric series to the files their refs name,
Flight Recorder dumps byte for byte to ``traces/flight_recorder/``, and the reports of what could not
be gathered to ``sources.json``, so the bundle read back gives the same diagnosis. Streams, events or
series of two sources that name the same file are written one after the other into it, never lost.
"""

from __future__ import annotations

import json
import shutil
from collections import defaultdict
from datetime import datetime
from pathlib import Path, PurePosixPath

from engine.bundle.query_range import node_from_labels
from engine.bundle.reader import ATTEMPT_FILE, FLIGHT_RECORDER, HISTORY, LOG_SUFFIXES, SOURCES_FILE, BundleError
from engine.context import (
    Attempt,
    AttemptContext,
    History,
    LogStream,
    MetricSeries,
    SchedulerEvent,
    SourceReport,
    TaskRanks,
    TraceFile,
)

CHUNK = 1 << 20


def write_bundle(
    context: AttemptContext, destination: Path, *, stream_bytes: int | None = None, total_bytes: int | None = None
) -> None:
    """Write ``context`` into ``destination``, a directory that must not exist yet.

    A log stream is copied up to ``stream_bytes``, and all of them up to ``total_bytes``: a longer stream
    keeps its beginning and its end (where a failure shows) around a marker line, and the cut is reported
    in ``sources.json`` (so in the diagnosis's sources)."""
    destination.mkdir(parents=True)
    _write_json(destination / ATTEMPT_FILE, attempt_document(context.attempt))
    reports = list(context.reports)
    left = total_bytes
    for stream in context.streams:
        bounds = [bound for bound in (stream_bytes, left) if bound is not None]
        cap = min(bounds) if bounds else None
        written, cut = _append_stream(stream, destination / _stream_file(stream), cap)
        if left is not None:
            left = max(0, left - written)
        if cut:
            why = "the per-stream limit" if cap == stream_bytes else "the per-attempt limit"
            detail = f"{stream.ref}: {cut:,} bytes left out ({why}, {cap:,} bytes)"
            reports.append(SourceReport(name=stream.name, kind=stream.kind, status="partial", detail=detail))
    events: dict[str, list[dict]] = defaultdict(list)
    for event in context.events:
        events[_file_of(event.ref, ":", "events", event.source)].append(_event_document(event))
    for file, documents in events.items():
        _write_json(destination / file, documents)
    series: dict[str, list[dict]] = defaultdict(list)
    for one in context.metrics:
        series[_file_of(one.ref, "#", "metrics", one.name or "metrics")].append(_series_document(one))
    for file, result in series.items():
        _write_json(destination / file, {"status": "success", "data": {"resultType": "matrix", "result": result}})
    for trace in context.flight_recorder:
        _write_trace(trace, destination / FLIGHT_RECORDER / _safe(trace.name))
    if context.history is not None:
        write_history(context.history, destination / HISTORY)
    if reports:
        _write_json(
            destination / SOURCES_FILE,
            [{"name": r.name, "kind": r.kind, "status": r.status, "detail": r.detail} for r in reports],
        )


def write_history(history: History, folder: Path) -> None:
    """``history/`` as docs/bundles.md specifies it: ``nodes.json`` and ``attempts.json``."""
    folder.mkdir(parents=True, exist_ok=True)
    verdicts = [
        {"node": v.node, "cluster": v.cluster, "job_id": v.job_id, "attempt": v.attempt, "end": rfc3339(v.end),
         "outcome": v.outcome, "domain": v.domain, "subdomain": v.subdomain, "reviewed": v.reviewed}
        for v in history.nodes
    ]  # fmt: skip
    _write_json(folder / "nodes.json", {"window_days": history.window_days, "verdicts": verdicts})
    attempts = [
        {"attempt": a.attempt, "start": rfc3339(a.start), "end": rfc3339(a.end), "state": a.state,
         "outcome": a.outcome, "domain": a.domain, "subdomain": a.subdomain, "nodes": list(a.nodes),
         "reviewed": a.reviewed}
        for a in history.attempts
    ]  # fmt: skip
    _write_json(folder / "attempts.json", attempts)


def attempt_document(attempt: Attempt) -> dict:
    """An Attempt as the ``attempt.json`` document of docs/bundles.md."""
    document = {
        "cluster": attempt.cluster,
        "scheduler": attempt.scheduler,
        "job_id": attempt.job_id,
        "attempt": attempt.attempt,
        "name": attempt.name,
        "user": attempt.user,
        "nodes": list(attempt.nodes),
        "start": rfc3339(attempt.start),
        "end": rfc3339(attempt.end),
        "state": attempt.state,
        "exit_code": attempt.exit_code,
        "reason": attempt.reason,
        "timezone": attempt.timezone,
    }
    if isinstance(attempt.ranks, TaskRanks):
        document["tasks_per_node"] = attempt.ranks.per_node
    elif attempt.ranks:
        document["ranks"] = {str(rank): node for rank, node in sorted(attempt.ranks.items())}
    if attempt.image:
        document["image"] = attempt.image
    if attempt.environment:
        document["environment"] = dict(sorted(attempt.environment.items()))
    return document


def rfc3339(moment: datetime) -> str:
    text = moment.isoformat()
    return text[:-6] + "Z" if text.endswith("+00:00") else text


def _write_json(path: Path, document) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def _safe(name: str) -> str:
    """A name usable as one path component inside the bundle."""
    cleaned = name.replace("/", "_").replace("\\", "_").replace("\0", "_")
    return "_" + cleaned[1:] if cleaned.startswith(".") or not cleaned else cleaned


def _stream_file(stream: LogStream) -> str:
    """The stream's file: its ref when that is where ``load_bundle`` reads the same stream back, else
    ``logs/<node>/<name>.log`` (``logs/<name>.log`` for a stream of no single node)."""
    folder = ("logs", _safe(stream.node)) if stream.node else ("logs",)
    ref = PurePosixPath(stream.ref)
    if ref.parts[:-1] == folder and ref.suffix in LOG_SUFFIXES and ref.stem == stream.name:
        return stream.ref
    return "/".join((*folder, f"{_safe(stream.name)}.log"))


def _append_stream(stream: LogStream, path: Path, cap: int | None) -> tuple[int, int]:
    """Copy the stream (at most ``cap`` bytes: its first and last halves); (bytes written, bytes left out)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with stream.opener() as source, open(path, "ab") as out:
        if out.tell() > 0:  # a second stream into the same file starts on a line of its own
            with open(path, "rb") as written:
                written.seek(-1, 2)
                if written.read(1) != b"\n":
                    out.write(b"\n")
        if cap is None:
            shutil.copyfileobj(source, out, CHUNK)
            return out.tell(), 0
        start = out.tell()
        head = _copy(source, out, cap // 2 if source.seekable() else cap)
        if not source.seekable():  # the beginning only; what follows is counted
            rest = 0
            while chunk := source.read(CHUNK):
                rest += len(chunk)
            return out.tell() - start, rest
        here, size = source.tell(), source.seek(0, 2)
        if size - here <= cap - head:
            source.seek(here)
            _copy(source, out, cap - head)
            return out.tell() - start, 0
        source.seek(size - (cap - head))
        out.write(b"\n[faultline: %d bytes left out here]\n" % (size - cap))
        return head + _copy(source, out, cap - head), size - cap


def _copy(source, out, most: int) -> int:
    copied = 0
    while copied < most and (chunk := source.read(min(CHUNK, most - copied))):
        out.write(chunk)
        copied += len(chunk)
    return copied


def _write_trace(trace: TraceFile, path: Path) -> None:
    """A trace file byte for byte, under its own name: two files of one name would be two dumps of one rank."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        out = open(path, "xb")  # noqa: SIM115
    except FileExistsError:
        raise BundleError(f"{FLIGHT_RECORDER}/{path.name}: two trace files of this name") from None
    with trace.opener() as source, out:
        shutil.copyfileobj(source, out, CHUNK)


def _file_of(ref: str, separator: str, folder: str, fallback: str) -> str:
    """The bundle file a ref points into (``events/k8s.json:3`` -> ``events/k8s.json``), or one named after
    ``fallback`` when the ref names none."""
    file = PurePosixPath(ref.rpartition(separator)[0] or ref)
    if file.parent == PurePosixPath(folder) and file.suffix == ".json" and _safe(file.name) == file.name:
        return str(file)
    return f"{folder}/{_safe(fallback)}.json"


def _event_document(event: SchedulerEvent) -> dict:
    return {
        "time": rfc3339(event.time) if event.time else None,
        "node": event.node,
        "source": event.source,
        "reason": event.reason,
        "message": event.message,
    }


def _series_document(series: MetricSeries) -> dict:
    """A series as Prometheus returns it. When its labels would place it on another node than the source
    did (a configured ``node_label``), ``Hostname`` names the source's node and the exporter's value is
    kept as ``exported_Hostname``, the way Prometheus keeps a clashing label."""
    labels = dict(series.labels)
    if series.name and labels.get("__name__") != series.name:
        labels["__name__"] = series.name
    if series.node is not None and node_from_labels(labels) != series.node:
        if "Hostname" in labels:
            labels["exported_Hostname"] = labels["Hostname"]
        labels["Hostname"] = series.node
    values = [[int(t) if float(t).is_integer() else t, repr(float(v))] for t, v in series.samples]
    return {"metric": labels, "values": values}
