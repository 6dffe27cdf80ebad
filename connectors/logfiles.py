"""Node logs read from log files on a path template (a shared filesystem or a central syslog host): the
``logfiles`` kind.

Settings: ``paths`` maps a stream name to a path template. ``{node}`` in a template is replaced by
each node's name (one stream per node, e.g. ``/srv/logs/{node}/syslog``); a template without it is one
file holding the lines of many hosts (a central rsyslog file), read as a stream of no single node.
Files are read lazily by the engine, whatever their size.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from pathlib import Path

from connectors.settings_reader import Settings
from engine.context import LogStream, SourceReport, stream_kind


class LogFileSource:
    def __init__(self, name: str, settings: Mapping):
        self.name = name
        reader = Settings(name, settings)
        self.paths = reader.mapping("paths", required=True)
        if not self.paths:
            raise reader.error("paths", "must name at least one stream")
        reader.finish()

    def fetch_logs(
        self, nodes: Sequence[str], start: datetime, end: datetime
    ) -> tuple[list[LogStream], list[SourceReport]]:
        streams, reports = [], []
        for stream, template in sorted(self.paths.items()):
            kind = stream_kind(stream)
            if "{node}" not in template:
                path = Path(template)
                if path.is_file():
                    streams.append(LogStream.from_path(f"logs/{stream}.log", stream, None, path))
                    reports.append(SourceReport(stream, kind, "ok", f"{self.name}: {path}"))
                else:
                    reports.append(SourceReport(stream, kind, "missing", f"{self.name}: no file {path}"))
                continue
            lacking = []
            for node in nodes:
                path = Path(template.replace("{node}", node))
                if path.is_file():
                    streams.append(LogStream.from_path(f"logs/{node}/{stream}.log", stream, node, path))
                else:
                    lacking.append(str(path))
            reports.append(_coverage_report(self.name, stream, kind, len(nodes), lacking))
        return streams, reports


def _coverage_report(source: str, stream: str, kind: str, total: int, lacking: list[str]) -> SourceReport:
    if not lacking:
        return SourceReport(stream, kind, "ok", f"{source}: {total} node{'s' if total != 1 else ''}")
    status = "missing" if len(lacking) == total else "partial"
    shown = ", ".join(lacking[:3]) + (f" and {len(lacking) - 3} more" if len(lacking) > 3 else "")
    return SourceReport(stream, kind, status, f"{source}: {total - len(lacking)} of {total} nodes; no file {shown}")
