"""Flight Recorder dumps as typed objects: one file per rank, pickle (PyTorch's default) or JSON, version checked.

PyTorch names each file `<prefix><rank>` (TORCH_FR_DUMP_TEMP_FILE, older TORCH_NCCL_DEBUG_INFO_TEMP_FILE); the dump
itself does not hold the rank. The field set is the one of torch/csrc/distributed/c10d/FlightRecorder.hpp; the JSON
flavour differs from the pickle in three ways this module evens out: `process_group` is a list, not a tuple,
`pg_status` values are strings, and an unknown `time_discovered_*_ns` is 0, not None.
"""

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from engine.flight_recorder import unpickle
from engine.flight_recorder.errors import DumpError
from engine.limits import Limits, TooLarge, load_json

# The dump versions whose fields this reader knows (FlightRecorder.hpp's version_val): 2.4 brought the field set read
# here (pg_status, collective and p2p sequence ids, dtypes, is_p2p); torch 2.13 and 2.14 write "2.10".
SUPPORTED_VERSIONS = tuple(f"2.{minor}" for minor in range(4, 11))
STATES = ("scheduled", "started", "completed")
MAX_FILES = 100_000
_RANKED_NAME = re.compile(r"^(.*?)(\d+)$")


class Frame(NamedTuple):
    name: str
    filename: str
    line: int


class Entry(NamedTuple):
    """One recorded collective or point-to-point operation of one rank (a NamedTuple: thousands per dump)."""

    record_id: int
    pg_id: int
    process_group: str  # the group's name, the same on every rank (pg_id is per rank)
    pg_desc: str
    collective_seq_id: int
    p2p_seq_id: int
    op_id: int
    profiling_name: str  # "nccl:all_reduce", "gloo:broadcast", "nccl:send 0->1", "nccl:recv 1<-0"
    is_p2p: bool
    input_sizes: tuple[tuple[int, ...], ...]
    input_dtypes: tuple[str, ...]
    output_sizes: tuple[tuple[int, ...], ...]
    output_dtypes: tuple[str, ...]
    state: str  # one of STATES
    retired: bool | None
    time_created_ns: int
    time_discovered_started_ns: int | None
    time_discovered_completed_ns: int | None
    timeout_ms: int | None
    duration_ms: float | None
    frames: tuple[Frame, ...]

    @property
    def seq(self) -> int:
        """The sequence number that orders this operation: the p2p one for point-to-point, else the collective."""
        return self.p2p_seq_id if self.is_p2p else self.collective_seq_id


@dataclass(frozen=True, slots=True)
class GroupConfig:
    """A process group as the dump's `pg_config` describes it; `ranks` are global ranks."""

    name: str
    desc: str
    ranks: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class GroupStatus:
    """The dump's `pg_status` for one group (sequence numbers; -1 for none)."""

    pg_id: int
    last_enqueued: int
    last_started: int
    last_completed: int


@dataclass(frozen=True, slots=True)
class Dump:
    rank: int
    file: str
    format: str  # "pickle" or "json"
    version: str
    comm_lib_version: str
    entries: tuple[Entry, ...]
    groups: tuple[GroupConfig, ...]  # sorted by name; groups with an empty name (Gloo's) left out
    status: tuple[GroupStatus, ...]  # sorted by pg_id
    # Gloo's record under an empty name: the ranks of the last group this rank created (torch 2.14: group-local,
    # 0..n-1; 2.13: global for the default group, none for a subgroup); None when the dump has no such record
    unnamed_ranks: tuple[int, ...] | None = None


def read_dump_dir(directory: str | os.PathLike, *, prefix: str | None = None) -> tuple[Dump, ...]:
    """Every `<prefix><rank>` file in `directory` (not its subfolders), sorted by rank.

    Without `prefix`, the files whose names end in a number must share one prefix; other files are ignored.
    """
    folder = Path(directory)
    if not folder.is_dir():
        raise DumpError(f"{folder}: not a directory")
    names = [path.name for path in folder.iterdir() if path.is_file()]
    files, _ = rank_files(names, prefix=prefix, where=str(folder))
    return tuple(read_dump(folder / files[rank], rank=rank) for rank in sorted(files))


def rank_of(name: str) -> int | None:
    """The rank a dump's file name ends with (`rank_12` -> 12), or None for a name that is no dump's."""
    match = _RANKED_NAME.match(name)
    return int(match.group(2)) if match and not name.startswith(".") else None


def rank_files(names, *, prefix: str | None = None, where: str) -> tuple[dict[int, str], tuple[str, ...]]:
    """Which of the file `names` are dumps, of which rank (`<prefix><rank>`), and the names that are not (sorted).

    Without `prefix`, the names that end in a number must share one prefix. Several prefixes, two files of one rank
    (`rank_3`, `rank_03`) or more than MAX_FILES dumps are a DumpError naming `where`.
    """
    ranked: dict[str, dict[int, str]] = {}
    others = []
    for name in sorted(names):
        match = _RANKED_NAME.match(name)
        if not match or name.startswith(".") or (prefix is not None and match.group(1) != prefix):
            others.append(name)
            continue
        files = ranked.setdefault(match.group(1), {})
        rank = int(match.group(2))
        if rank in files:
            raise DumpError(f"{where}: two dumps of rank {rank} ({files[rank]}, {name})")
        files[rank] = name
    if len(ranked) > 1:
        raise DumpError(f"{where}: dumps with several prefixes ({', '.join(sorted(ranked))}): name the prefix")
    files = next(iter(ranked.values()), {})
    if len(files) > MAX_FILES:
        raise DumpError(f"{where}: {len(files):,} dumps, more than {MAX_FILES:,}")
    return files, tuple(others)


def read_dump(path: str | os.PathLike, *, rank: int) -> Dump:
    """One rank's dump; the format is told by the content (a pickle starts with its PROTO opcode)."""
    path = Path(path)
    size = path.stat().st_size
    if size > unpickle.MAX_BYTES:
        raise DumpError(f"{path.name}: {size:,} bytes, more than the {unpickle.MAX_BYTES:,} a dump may have")
    return parse_dump(path.read_bytes(), name=path.name, rank=rank)


def parse_dump(data: bytes, *, name: str, rank: int) -> Dump:
    if data[:1] == b"\x80":
        raw, kind = unpickle.loads(data, name=name), "pickle"
    elif data.lstrip()[:1] == b"{":
        raw, kind = _load_json(data, name), "json"
    else:
        raise DumpError(f"{name}: neither a pickle nor a JSON Flight Recorder dump")
    return _dump(raw, name=name, rank=rank, kind=kind)


def _load_json(data: bytes, name: str) -> object:
    try:
        return load_json(data, Limits(json_bytes=unpickle.MAX_BYTES))
    except TooLarge as error:
        raise DumpError(f"{name}: {error}") from None
    except ValueError as error:
        raise DumpError(f"{name}: malformed JSON ({error})") from None


def _dump(raw: object, *, name: str, rank: int, kind: str) -> Dump:
    if not isinstance(raw, dict):
        raise DumpError(f"{name}: a dump is a dict, not a {type(raw).__name__}")
    version = raw.get("version")
    if version not in SUPPORTED_VERSIONS:
        raise DumpError(
            f"{name}: Flight Recorder dump version {version!r} is not supported "
            f"(supported: {', '.join(SUPPORTED_VERSIONS)})"
        )
    entries = raw.get("entries", [])
    if not isinstance(entries, list):
        raise DumpError(f"{name}: field entries: expected a list, got {type(entries).__name__}")
    groups, unnamed = _groups(raw.get("pg_config", {}), name)
    return Dump(
        rank=rank,
        file=name,
        format=kind,
        version=version,
        comm_lib_version=_text(raw, "comm_lib_version", name, default=""),
        entries=_entries(entries, name),
        groups=groups,
        status=_status(raw.get("pg_status", {}), name),
        unnamed_ranks=unnamed,
    )


_INT_FIELDS = ("record_id", "pg_id", "collective_seq_id", "p2p_seq_id", "op_id", "time_created_ns")


def _entries(raw_entries: list, name: str) -> tuple[Entry, ...]:
    frames: dict[int, Frame] = {}  # PyTorch shares each distinct frame between entries
    return tuple(_entry(raw, f"{name}: entry {index}", frames) for index, raw in enumerate(raw_entries))


def _entry(raw: object, where: str, frames: dict[int, Frame]) -> Entry:
    if type(raw) is not dict:
        raise DumpError(f"{where}: expected a dict, got {type(raw).__name__}")
    get = raw.get
    for field in _INT_FIELDS:
        if type(get(field)) is not int:
            _int(raw, field, where)
    group = get("process_group")
    if type(group) not in (list, tuple) or len(group) != 2 or type(group[0]) is not str or type(group[1]) is not str:
        raise DumpError(f"{where}: field process_group: expected a (name, description) pair, got {group!r:.80}")
    profiling_name = _text(raw, "profiling_name", where)
    state = get("state")
    if state not in STATES:
        raise DumpError(f"{where}: field state: {state!r:.40} is none of {', '.join(STATES)}")
    is_p2p = get("is_p2p")
    if is_p2p is None:  # older dumps: tell by the name
        is_p2p = profiling_name.split(":", 1)[-1].split(" ", 1)[0] in ("send", "recv")
    retired, timeout, duration = get("retired"), get("timeout_ms"), get("duration_ms")
    return Entry(
        get("record_id"),
        get("pg_id"),
        group[0],
        group[1],
        get("collective_seq_id"),
        get("p2p_seq_id"),
        get("op_id"),
        profiling_name,
        _bool(is_p2p, "is_p2p", where),
        _sizes(raw, "input_sizes", where),
        _dtypes(raw, "input_dtypes", where),
        _sizes(raw, "output_sizes", where),
        _dtypes(raw, "output_dtypes", where),
        state,
        None if retired is None else _bool(retired, "retired", where),
        get("time_created_ns"),
        _time(raw, "time_discovered_started_ns", where),
        _time(raw, "time_discovered_completed_ns", where),
        None if timeout is None else _int(raw, "timeout_ms", where),
        None if duration is None else _number(duration, "duration_ms", where),
        _frames(get("frames", ()), where, frames),
    )


def _int(raw: dict, field: str, where: str) -> int:
    value = raw.get(field)
    if type(value) is not int:
        raise DumpError(f"{where}: field {field}: expected an integer, got {value!r:.40}")
    return value


def _text(raw: dict, field: str, where: str, default: str | None = None) -> str:
    value = raw.get(field, default)
    if not isinstance(value, str):
        raise DumpError(f"{where}: field {field}: expected a string, got {value!r:.40}")
    return value


def _bool(value: object, field: str, where: str) -> bool:
    if type(value) is not bool:
        raise DumpError(f"{where}: field {field}: expected a boolean, got {value!r:.40}")
    return value


def _number(value: object, field: str, where: str) -> float:
    if type(value) not in (int, float):
        raise DumpError(f"{where}: field {field}: expected a number, got {value!r:.40}")
    return float(value)


def _time(raw: dict, field: str, where: str) -> int | None:
    value = raw.get(field)
    if value is None or value == 0:  # None in a pickle, 0 in JSON
        return None
    return _int(raw, field, where)


def _sizes(raw: dict, field: str, where: str) -> tuple[tuple[int, ...], ...]:
    value = raw.get(field)
    if type(value) in (list, tuple):
        sizes = []
        for dims in value:
            if type(dims) not in (list, tuple):
                break
            for dim in dims:
                if type(dim) is not int:
                    break
            else:
                sizes.append(tuple(dims))
                continue
            break
        else:
            return tuple(sizes)
    raise DumpError(f"{where}: field {field}: expected a list of lists of integers, got {value!r:.60}")


def _dtypes(raw: dict, field: str, where: str) -> tuple[str, ...]:
    value = raw.get(field, ())
    if type(value) in (list, tuple):
        for dtype in value:
            if type(dtype) is not str:
                break
        else:
            return tuple(value)
    raise DumpError(f"{where}: field {field}: expected a list of strings, got {value!r:.60}")


def _frames(value: object, where: str, known: dict[int, Frame]) -> tuple[Frame, ...]:
    if type(value) not in (list, tuple):
        raise DumpError(f"{where}: field frames: expected a list, got {type(value).__name__}")
    frames = []
    for frame in value:
        converted = known.get(id(frame))
        if converted is None:
            if type(frame) is not dict:
                raise DumpError(f"{where}: field frames: expected dicts, got {type(frame).__name__}")
            converted = Frame(_text(frame, "name", where), _text(frame, "filename", where), _int(frame, "line", where))
            known[id(frame)] = converted
        frames.append(converted)
    return tuple(frames)


def _groups(raw: object, name: str) -> tuple[tuple[GroupConfig, ...], tuple[int, ...] | None]:
    """The named groups' configurations, and the ranks recorded under an empty name (Gloo's, torch 2.13 and 2.14:
    each group created overwrites it, so it holds the last one's)."""
    if not isinstance(raw, dict):
        raise DumpError(f"{name}: field pg_config: expected a dict, got {type(raw).__name__}")
    groups, unnamed = [], None
    for key, config in raw.items():
        where = f"{name}: pg_config {key!r:.40}"
        if not isinstance(config, dict):
            raise DumpError(f"{where}: expected a dict, got {type(config).__name__}")
        group_name = _text(config, "name", where)
        ranks = _ranks(config.get("ranks"), where)
        if not group_name:
            unnamed = ranks
            continue
        groups.append(GroupConfig(group_name, _text(config, "desc", where), ranks))
    return tuple(sorted(groups, key=lambda group: group.name)), unnamed


def _ranks(value: object, where: str) -> tuple[int, ...]:
    if not isinstance(value, str) or not value.startswith("[") or not value.endswith("]"):
        raise DumpError(f"{where}: field ranks: expected a list like '[0, 1]', got {value!r:.60}")
    inner = value[1:-1].strip()
    try:
        return tuple(int(part) for part in inner.split(",")) if inner else ()
    except ValueError:
        raise DumpError(f"{where}: field ranks: expected a list like '[0, 1]', got {value!r:.60}") from None


def _status(raw: object, name: str) -> tuple[GroupStatus, ...]:
    if not isinstance(raw, dict):
        raise DumpError(f"{name}: field pg_status: expected a dict, got {type(raw).__name__}")
    status = []
    for key, values in raw.items():
        where = f"{name}: pg_status {key!r:.40}"
        if not isinstance(values, dict):
            raise DumpError(f"{where}: expected a dict, got {type(values).__name__}")
        numbers = [_seq(key, "pg_id", where)] + [
            _seq(values.get(f"last_{step}_collective"), f"last_{step}_collective", where)
            for step in ("enqueued", "started", "completed")
        ]
        status.append(GroupStatus(*numbers))
    return tuple(sorted(status, key=lambda group: group.pg_id))


def _seq(value: object, field: str, where: str) -> int:
    """An integer that JSON dumps write as a string."""
    if type(value) is int:
        return value
    if isinstance(value, str) and re.fullmatch(r"-?\d{1,19}", value):
        return int(value)
    raise DumpError(f"{where}: field {field}: expected an integer, got {value!r:.40}")
