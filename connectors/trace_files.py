"""Flight Recorder dumps gathered for an attempt's bundle (``traces/flight_recorder/``), whatever the connector.

A scheduler connector names where a job's dumps are with a path template (its ``flight_recorder_path`` setting);
``check_template`` refuses, when the settings are saved, a template that is not absolute, climbs out with ``..`` or
names a placeholder the connector does not fill. ``DumpFiles`` keeps what the connector finds: only files named like
PyTorch's dumps (``<prefix><rank>``), each within the dump reader's size bound, one per name. When the template
has a ``{node}`` (or ``{pod}``) folder, the node whose folder held a rank's dump places that rank: the attempt's rank
map. The dumps themselves are read and checked by the engine, never here.
"""

from __future__ import annotations

import dataclasses
import string
from collections.abc import Callable

from connectors.settings_reader import Settings
from engine.bundle import FLIGHT_RECORDER
from engine.context import Attempt, SourceReport, TraceFile
from engine.flight_recorder.dumps import MAX_FILES, rank_of
from engine.flight_recorder.unpickle import MAX_BYTES

REPORT = "flight_recorder"


def check_template(reader: Settings, key: str, placeholders: frozenset[str], *, under: str = "/") -> str | None:
    """The path template of setting ``key`` (None when unset), refused unless absolute, below ``under``, free of
    ``..`` and of placeholders other than ``placeholders``."""
    template = reader.text(key)
    if template is None:
        return None
    try:
        names = {field for _, field, _, _ in string.Formatter().parse(template) if field is not None}
    except ValueError as error:
        raise reader.error(key, f"is not a path template ({error})") from None
    unknown = sorted(names - placeholders)
    if unknown:
        known = ", ".join(f"{{{name}}}" for name in sorted(placeholders))
        raise reader.error(key, f"names {{{unknown[0]}}}, which is not one of {known}")
    if not template.startswith(under) or ".." in template.split("/"):
        raise reader.error(key, f"must be an absolute path under {under} without '..'")
    return template


def fill(template: str, **values: str) -> str:
    """The template with its placeholders filled (a value never adds a path component of its own)."""
    return template.format(**{name: value.replace("/", "_") for name, value in values.items()})


class DumpFiles:
    """The dump files found for one attempt, one per file name, with the node whose folder held each."""

    def __init__(self, connector: str):
        self.connector = connector
        self.files: dict[str, TraceFile] = {}
        self.nodes: dict[str, str | None] = {}
        self.problems: list[str] = []

    def add(self, name: str, size: int, node: str | None, where: str, trace: Callable[[str], TraceFile]) -> None:
        """Keep the file ``name`` of ``size`` bytes found at ``where`` (``trace(ref)`` makes it) if it is a dump."""
        if rank_of(name) is None:
            return
        if size > MAX_BYTES:
            self.problems.append(f"{where}: larger than the {MAX_BYTES:,} bytes a dump may have; not gathered")
        elif name in self.files:
            self.problems.append(f"{where}: a second dump named {name}; not gathered")
        elif len(self.files) >= MAX_FILES:
            self.problems.append(f"{where}: more than {MAX_FILES:,} dumps; not gathered")
        else:
            self.files[name] = trace(f"{FLIGHT_RECORDER}/{name}")
            self.nodes[name] = node

    def attempt(self, attempt: Attempt) -> Attempt:
        """The attempt with the rank map the dumps' folders give, when it has none and every dump's node is known."""
        if attempt.ranks or not self.files or None in self.nodes.values():
            return attempt
        ranks = {rank_of(name): node for name, node in self.nodes.items()}
        return dataclasses.replace(attempt, ranks=dict(sorted(ranks.items())))

    def traces(self) -> tuple[TraceFile, ...]:
        return tuple(self.files[name] for name in sorted(self.files))

    def reports(self, searched: list[str]) -> list[SourceReport]:
        """What could not be gathered; ``searched`` are the folders looked in (for the report of none found)."""
        shown = ", ".join(searched[:3]) + (f" and {len(searched) - 3} more" if len(searched) > 3 else "")
        if not self.files and not self.problems:
            detail = f"{self.connector}: no Flight Recorder dump in {shown}"
            return [SourceReport(REPORT, "traces", "missing", detail)]
        if not self.problems:
            return []
        status = "partial" if self.files else "error"
        detail = f"{self.connector}: " + "; ".join(self.problems[:5])
        if len(self.problems) > 5:
            detail += f"; and {len(self.problems) - 5} more"
        return [SourceReport(REPORT, "traces", status, detail)]
