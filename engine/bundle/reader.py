"""Reading an attempt bundle (docs/bundles.md) into the engine's input, an ``AttemptContext``.

The bundle is the on-disk form of an ``AttemptContext``: every connector produces the same context, and
the bundle read back is the reference they are tested against. Nothing here reads a log file: streams
are opened lazily by the engine, so a bundle of any size costs the same to load.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from engine.bundle.query_range import series_of_document
from engine.context import (
    Attempt,
    AttemptContext,
    History,
    LogStream,
    NodeVerdict,
    PreviousAttempt,
    SchedulerEvent,
    SourceReport,
    TaskRanks,
    TraceFile,
    stream_kind,
)
from engine.limits import DEFAULT_LIMITS, Limits, load_json

ATTEMPT_FILE = "attempt.json"
HISTORY = "history"  # history/nodes.json, history/attempts.json: what the store knew (optional)
LOG_SUFFIXES = (".log", ".out", ".err")
ATTEMPT_FIELDS = {
    "cluster", "scheduler", "job_id", "attempt", "name", "user", "nodes", "start", "end", "state",
    "exit_code", "reason", "ranks", "tasks_per_node", "timezone", "image", "environment",
}  # fmt: skip
REQUIRED_FIELDS = ("cluster", "scheduler", "job_id", "nodes", "start", "end", "state")
# What the connectors that gathered a bundle could and could not gather (optional, at the bundle's top).
SOURCES_FILE = "sources.json"
REPORT_STATUSES = ("ok", "partial", "missing", "unreadable", "error")
REPORT_FIELDS = ("name", "kind", "status", "detail")
SCHEDULERS = ("slurm", "kueue", "kubernetes", "static")
# PyTorch Flight Recorder dumps, one file per rank as PyTorch names them (``rank_0``, ``rank_1``, ...).
FLIGHT_RECORDER = "traces/flight_recorder"


class BundleError(Exception):
    """The bundle cannot be used; the message names the file and the field. (A connector that reads
    bundles raises it as a permanent ``ConnectorError``: reading it again cannot help.)"""


def parse_time(value: object, where: str) -> datetime:
    """An RFC 3339 time as an aware UTC datetime, or a BundleError naming ``where``."""
    if not isinstance(value, str):
        raise BundleError(f"{where}: expected an RFC 3339 time string, got {type(value).__name__}")
    text = value.strip()
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        raise BundleError(f"{where}: {value!r} is not an RFC 3339 time") from None
    if parsed.tzinfo is None:
        raise BundleError(f"{where}: {value!r} has no time zone offset")
    return parsed.astimezone(UTC)


def parse_attempt(
    data: object, *, where: str = ATTEMPT_FILE, strict: bool = False, limits: Limits = DEFAULT_LIMITS
) -> Attempt:
    """Validate an ``attempt.json`` document. ``strict`` also rejects unknown fields."""
    if not isinstance(data, dict):
        raise BundleError(f"{where}: expected a JSON object")
    if strict:
        unknown = sorted(set(data) - ATTEMPT_FIELDS)
        if unknown:
            raise BundleError(f"{where}: unknown field {unknown[0]!r}")
    for name in REQUIRED_FIELDS:
        if name not in data:
            raise BundleError(f"{where}: missing required field {name!r}")
    text_fields = {}
    for name in ("cluster", "scheduler", "job_id", "state", "name", "user", "exit_code", "reason", "timezone"):
        value = data.get(name, "")
        if isinstance(value, int) and not isinstance(value, bool) and name in ("job_id", "exit_code"):
            value = str(value)
        if value is None:
            value = ""
        if not isinstance(value, str):
            raise BundleError(f"{where}: field {name!r} must be a string")
        text_fields[name] = value.strip()
    for name in ("cluster", "job_id", "state"):
        if not text_fields[name]:
            raise BundleError(f"{where}: field {name!r} must not be empty")
    if text_fields["scheduler"] not in SCHEDULERS:
        raise BundleError(f"{where}: field 'scheduler' must be one of {', '.join(SCHEDULERS)}")
    attempt_no = data.get("attempt", 0)
    if not isinstance(attempt_no, int) or isinstance(attempt_no, bool) or attempt_no < 0:
        raise BundleError(f"{where}: field 'attempt' must be a non-negative integer")
    nodes = data["nodes"]
    if not isinstance(nodes, list) or not nodes or not all(isinstance(n, str) and n.strip() for n in nodes):
        raise BundleError(f"{where}: field 'nodes' must be a non-empty list of node names")
    nodes = tuple(dict.fromkeys(n.strip() for n in nodes))
    if len(nodes) > limits.nodes:
        raise BundleError(f"{where}: field 'nodes': {len(nodes):,} nodes, more than the {limits.nodes:,} allowed")
    start = parse_time(data["start"], f"{where}: field 'start'")
    end = parse_time(data["end"], f"{where}: field 'end'")
    if end < start:
        raise BundleError(f"{where}: field 'end' is before 'start'")
    if not isinstance(data.get("image", ""), str):
        raise BundleError(f"{where}: field 'image' must be a string")
    environment = data.get("environment", {})
    if not isinstance(environment, dict) or not all(isinstance(v, str) for v in environment.values()):
        raise BundleError(f"{where}: field 'environment' must be an object of strings")
    timezone = text_fields["timezone"] or "UTC"
    try:
        ZoneInfo(timezone)
    except (ZoneInfoNotFoundError, ValueError):
        raise BundleError(f"{where}: field 'timezone': unknown time zone {timezone!r}") from None
    return Attempt(
        cluster=text_fields["cluster"],
        scheduler=text_fields["scheduler"],
        job_id=text_fields["job_id"],
        attempt=attempt_no,
        nodes=nodes,
        start=start,
        end=end,
        state=text_fields["state"],
        name=text_fields["name"],
        user=text_fields["user"],
        exit_code=text_fields["exit_code"],
        reason=text_fields["reason"],
        ranks=_rank_map(data, nodes, where, limits.ranks),
        timezone=timezone,
        image=data.get("image", "").strip(),
        environment=dict(sorted(environment.items())),
    )


def _rank_map(data: dict, nodes: tuple[str, ...], where: str, most: int) -> Mapping[int, str]:
    ranks = data.get("ranks")
    per_node = data.get("tasks_per_node")
    too_many = f"{where}: field {{}}: more than the {most:,} ranks allowed"
    if ranks is not None:
        if not isinstance(ranks, dict):
            raise BundleError(f"{where}: field 'ranks' must be an object mapping rank to node")
        if len(ranks) > most:
            raise BundleError(too_many.format("'ranks'"))
        mapping = {}
        for rank, node in ranks.items():
            if not (rank.isascii() and rank.isdigit()) or len(rank) > 18:
                raise BundleError(f"{where}: field 'ranks': {rank[:40]!r} is not a rank number")
            number = int(rank)
            if not isinstance(node, str) or not node:
                raise BundleError(f"{where}: field 'ranks': rank {rank} must map to a node name")
            mapping[number] = node
        return mapping
    if per_node is not None:
        if not isinstance(per_node, int) or isinstance(per_node, bool) or per_node < 1:
            raise BundleError(f"{where}: field 'tasks_per_node' must be a positive integer")
        if per_node > most // len(nodes):
            raise BundleError(too_many.format("'tasks_per_node'"))
        return TaskRanks(nodes, per_node)
    return {}


def _json_objects(path: Path, ref: str, what: str, limits: Limits) -> list[dict]:
    """A bundle file holding a JSON list of objects; a BundleError names the entry at fault."""
    data = _json_file(path, ref, limits)
    if not isinstance(data, list):
        raise BundleError(f"{ref}: expected a JSON list of {what}")
    for index, item in enumerate(data):
        if not isinstance(item, dict):
            raise BundleError(f"{ref}: entry {index}: expected an object")
    return data


def _json_file(path: Path, ref: str, limits: Limits):
    """A bundle's JSON file within the limits; a BundleError names the file and what is wrong."""
    if path.stat().st_size > limits.json_bytes:
        raise BundleError(f"{ref}: larger than {limits.json_bytes:,} bytes")
    try:
        return load_json(path.read_bytes(), limits)
    except (OSError, ValueError, UnicodeDecodeError) as exc:
        raise BundleError(f"{ref}: not valid JSON ({exc})") from None


def read_history(folder: Path, limits: Limits = DEFAULT_LIMITS) -> History:
    """``history/`` (docs/bundles.md): ``nodes.json`` (``{"window_days", "verdicts": [...]}``) and ``attempts.json``
    (a list), each optional; a BundleError names the file, the entry and the field at fault."""
    window, verdicts, attempts = 14, [], []
    ref = f"{HISTORY}/nodes.json"
    if (folder / "nodes.json").is_file():
        data = _json_file(folder / "nodes.json", ref, limits)
        if not isinstance(data, dict) or not isinstance(data.get("verdicts"), list):
            raise BundleError(f"{ref}: expected an object with a list of verdicts")
        window = data.get("window_days", 14)
        if not isinstance(window, int) or isinstance(window, bool) or window < 0:
            raise BundleError(f"{ref}: field 'window_days' must be a non-negative integer")
        for index, item in enumerate(data["verdicts"]):
            where = f"{ref}: verdict {index}"
            if not isinstance(item, dict):
                raise BundleError(f"{where}: expected an object")
            verdicts.append(
                NodeVerdict(
                    node=_history_text(item, "node", where, required=True),
                    cluster=_history_text(item, "cluster", where, required=True),
                    job_id=_history_text(item, "job_id", where, required=True),
                    attempt=_history_number(item, "attempt", where),
                    end=parse_time(item.get("end"), f"{where}: field 'end'"),
                    outcome=_history_text(item, "outcome", where),
                    domain=_history_text(item, "domain", where),
                    subdomain=_history_text(item, "subdomain", where),
                    reviewed=item.get("reviewed") is True,
                    ref=f"{ref}#{index}",
                )
            )
    ref = f"{HISTORY}/attempts.json"
    if (folder / "attempts.json").is_file():
        for index, item in enumerate(_json_objects(folder / "attempts.json", ref, "attempts", limits)):
            where = f"{ref}: entry {index}"
            nodes = item.get("nodes", [])
            if not isinstance(nodes, list) or not all(isinstance(node, str) for node in nodes):
                raise BundleError(f"{where}: field 'nodes' must be a list of node names")
            attempts.append(
                PreviousAttempt(
                    attempt=_history_number(item, "attempt", where),
                    start=parse_time(item.get("start"), f"{where}: field 'start'"),
                    end=parse_time(item.get("end"), f"{where}: field 'end'"),
                    state=_history_text(item, "state", where),
                    outcome=_history_text(item, "outcome", where),
                    domain=_history_text(item, "domain", where),
                    subdomain=_history_text(item, "subdomain", where),
                    nodes=tuple(nodes),
                    reviewed=item.get("reviewed") is True,
                    ref=f"{ref}#{index}",
                )
            )
    return History(window_days=window, nodes=tuple(verdicts), attempts=tuple(attempts))


def _history_text(item: dict, name: str, where: str, *, required: bool = False) -> str:
    value = item.get(name, "")
    if not isinstance(value, str) or required and not value:
        raise BundleError(f"{where}: field {name!r} must be a{' non-empty' if required else ''} string")
    return value


def _history_number(item: dict, name: str, where: str) -> int:
    value = item.get(name)
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise BundleError(f"{where}: field {name!r} must be a non-negative integer")
    return value


def read_events(path: Path, ref: str, limits: Limits = DEFAULT_LIMITS) -> list[SchedulerEvent]:
    """The events of one ``events/*.json`` file; a BundleError names the entry and field at fault."""
    events = []
    for index, item in enumerate(_json_objects(path, ref, "events", limits)):
        time = item.get("time")
        events.append(
            SchedulerEvent(
                time=parse_time(time, f"{ref}: entry {index}: field 'time'") if time else None,
                node=_optional_text(item, "node", ref, index),
                source=_optional_text(item, "source", ref, index) or path.stem,
                reason=_optional_text(item, "reason", ref, index) or "",
                message=_optional_text(item, "message", ref, index) or "",
                ref=f"{ref}:{index + 1}",
            )
        )
    return events


def read_reports(path: Path) -> list[SourceReport]:
    """The reports of a bundle's ``sources.json``: a list of ``{name, kind, status, detail}``."""
    reports = []
    for index, item in enumerate(_json_objects(path, SOURCES_FILE, "sources", DEFAULT_LIMITS)):
        fields = {name: _optional_text(item, name, SOURCES_FILE, index) or "" for name in REPORT_FIELDS}
        for name in ("name", "kind"):
            if not fields[name]:
                raise BundleError(f"{SOURCES_FILE}: entry {index}: field {name!r} is required")
        if fields["status"] not in REPORT_STATUSES:
            raise BundleError(
                f"{SOURCES_FILE}: entry {index}: field 'status' must be one of {', '.join(REPORT_STATUSES)}"
            )
        reports.append(SourceReport(**fields))
    return reports


def _optional_text(item: dict, name: str, ref: str, index: int) -> str | None:
    value = item.get(name)
    if value is None:
        return None
    if not isinstance(value, str):
        raise BundleError(f"{ref}: entry {index}: field {name!r} must be a string")
    return value


def load_bundle(path: str | Path, *, strict: bool = False, limits: Limits = DEFAULT_LIMITS) -> AttemptContext:
    """Read the bundle at ``path``. Unreadable optional files are reported in ``reports``, not raised; so
    are the events and series past the limits (left out)."""
    root = Path(path)
    if not root.is_dir():
        raise BundleError(f"{root}: not a directory")
    attempt_file = root / ATTEMPT_FILE
    if not attempt_file.exists():
        raise BundleError(f"{attempt_file}: missing (every bundle needs attempt.json)")
    try:
        document = _json_file(attempt_file, str(attempt_file), limits)
    except PermissionError as exc:
        raise BundleError(f"{attempt_file}: unreadable ({exc.strerror})") from None
    attempt = parse_attempt(document, where=str(attempt_file), strict=strict, limits=limits)

    reports: list[SourceReport] = []
    if (root / SOURCES_FILE).is_file():
        try:
            reports.extend(read_reports(root / SOURCES_FILE))
        except BundleError as exc:
            reports.append(SourceReport(name=SOURCES_FILE, kind="sources", status="unreadable", detail=str(exc)))
    streams = _log_streams(root, reports)
    events = []
    for file in sorted((root / "events").glob("*.json")):
        ref = f"events/{file.name}"
        try:
            events.extend(read_events(file, ref, limits))
        except BundleError as exc:
            reports.append(SourceReport(name=file.stem, kind="events", status="unreadable", detail=str(exc)))
    if len(events) > limits.events:
        reports.append(_left_out("events", len(events), limits.events))
        events = events[: limits.events]
    metrics = []
    for file in sorted((root / "metrics").glob("*.json")):
        ref = f"metrics/{file.name}"
        try:
            metrics.extend(series_of_document(_json_file(file, ref, limits), ref))
        except BundleError as exc:
            reports.append(SourceReport(name=file.stem, kind="metrics", status="unreadable", detail=str(exc)))
        except (OSError, ValueError) as exc:
            reports.append(SourceReport(name=file.stem, kind="metrics", status="unreadable", detail=f"{ref}: {exc}"))
    if len(metrics) > limits.series:
        reports.append(_left_out("metrics", len(metrics), limits.series))
        metrics = metrics[: limits.series]
    traces = _trace_files(root, FLIGHT_RECORDER, reports)
    history = None
    if (root / HISTORY).is_dir():
        try:
            history = read_history(root / HISTORY, limits)
        except BundleError as exc:
            reports.append(SourceReport(name=HISTORY, kind="history", status="unreadable", detail=str(exc)))
    return AttemptContext(
        attempt=attempt,
        streams=tuple(streams),
        events=tuple(events),
        metrics=tuple(metrics),
        reports=tuple(reports),
        flight_recorder=traces,
        history=history,
    )


def _left_out(kind: str, found: int, kept: int) -> SourceReport:
    detail = (
        f"{found:,} {'series' if kind == 'metrics' else kind}; the first {kept:,} read, the rest left out (the limit)"
    )
    return SourceReport(name=f"{kind} (limit)", kind=kind, status="partial", detail=detail)


def _trace_files(root: Path, folder: str, reports: list[SourceReport]) -> tuple[TraceFile, ...]:
    """The files of a traces folder, opened lazily (the engine reads and checks them); a subfolder or
    anything else that is not a file is reported and ignored."""
    directory = root / folder
    if not directory.is_dir():
        return ()
    files = []
    for entry in sorted(directory.iterdir()):
        if entry.name.startswith("."):
            continue
        ref = f"{folder}/{entry.name}"
        if entry.is_file():
            files.append(TraceFile.from_path(ref, entry))
        else:
            reports.append(SourceReport(name=entry.name, kind="traces", status="unreadable",
                                        detail=f"{ref}: not a file; ignored"))  # fmt: skip
    return tuple(files)


def _log_streams(root: Path, reports: list[SourceReport]) -> list[LogStream]:
    logs = root / "logs"
    streams = []
    if not logs.is_dir():
        return streams
    for entry in sorted(logs.iterdir()):
        if entry.is_dir():
            for file in sorted(entry.iterdir()):
                if file.is_file() and file.suffix in LOG_SUFFIXES:
                    ref = f"logs/{entry.name}/{file.name}"
                    streams.append(LogStream.from_path(ref, file.stem, entry.name, file))
                elif not file.name.startswith("."):
                    reports.append(
                        SourceReport(
                            name=file.name,
                            kind=stream_kind(file.stem),
                            status="unreadable",
                            detail=f"logs/{entry.name}/{file.name}: not a .log, .out or .err file; ignored",
                        )
                    )
        elif entry.is_file() and entry.suffix in LOG_SUFFIXES:
            streams.append(LogStream.from_path(f"logs/{entry.name}", entry.stem, None, entry))
    return streams
