"""PyTorch Flight Recorder dumps: a safe reader and the analysis of a collective hang (see README.md)."""

from engine.flight_recorder.analysis import analyse
from engine.flight_recorder.dumps import (
    SUPPORTED_VERSIONS,
    Dump,
    Entry,
    Frame,
    GroupConfig,
    GroupStatus,
    parse_dump,
    read_dump,
    read_dump_dir,
)
from engine.flight_recorder.errors import DumpError, PickleRefused
from engine.flight_recorder.findings import (
    Collective,
    Finding,
    FindingKind,
    GroupReport,
    RankGroup,
    RankState,
    Report,
    format_ranks,
)

__all__ = [
    "SUPPORTED_VERSIONS",
    "Collective",
    "Dump",
    "DumpError",
    "Entry",
    "Finding",
    "FindingKind",
    "Frame",
    "GroupConfig",
    "GroupReport",
    "GroupStatus",
    "PickleRefused",
    "RankGroup",
    "RankState",
    "Report",
    "analyse",
    "format_ranks",
    "parse_dump",
    "read_dump",
    "read_dump_dir",
]
