"""Slurm's text outputs: ``sacct -P`` lines and ``scontrol show job -o`` records.

sacct runs with ``TZ=UTC``, so its times (``2026-11-02T10:14:07``, no zone) are UTC. Text output is
used, not ``--json``: Slurm 22.05's ``sacct --json`` reports exit code 0 for failed jobs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime

from connectors.base import ConnectorError
from connectors.slurm.hostlist import expand_hostlist

# JobName goes last: a '|' in a job name then stays in the name instead of shifting the other fields.
SACCT_FIELDS = ("JobID", "JobIDRaw", "User", "NodeList", "Start", "End", "State", "ExitCode", "WorkDir",
                "JobName")  # fmt: skip
NO_TIME = frozenset({"", "Unknown", "None", "N/A"})
NO_NODES = frozenset({"", "None assigned", "(null)"})
CANCELLED_BY = re.compile(r"^CANCELLED by (\d+)$")
# A key of ``scontrol show job -o``: a space, then a name such as JobId, AllocNode:Sid or CPUs/Task, then '='.
SCONTROL_KEY = re.compile(r"(?:^| )([A-Za-z][A-Za-z0-9_:/]*)=")


@dataclass(frozen=True)
class SacctRecord:
    """One line of ``sacct -P -X -D``: one run of a job allocation."""

    job_id: str
    job_id_raw: str
    name: str
    user: str
    nodes: tuple[str, ...]
    start: datetime | None
    end: datetime | None
    state: str
    cancelled_by: str
    exit_code: str
    workdir: str

    @property
    def started(self) -> bool:
        return self.start is not None and bool(self.nodes)


def parse_sacct(text: str) -> tuple[list[SacctRecord], list[str]]:
    """Records of ``sacct -P -n -o <SACCT_FIELDS>`` output, and the lines that could not be parsed."""
    records, bad = [], []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            records.append(parse_sacct_line(line))
        except ValueError as exc:
            bad.append(f"sacct line {number}: {exc}: {line[:200]!r}")
    return records, bad


def parse_sacct_line(line: str) -> SacctRecord:
    fields = line.split("|", len(SACCT_FIELDS) - 1)
    if len(fields) != len(SACCT_FIELDS):
        raise ValueError(f"expected {len(SACCT_FIELDS)} '|'-separated fields, got {len(fields)}")
    row = dict(zip(SACCT_FIELDS, fields, strict=True))
    if not row["JobID"]:
        raise ValueError("empty JobID")
    state, cancelled_by = row["State"].strip(), ""
    if match := CANCELLED_BY.match(state):
        state, cancelled_by = "CANCELLED", match.group(1)
    try:
        nodes = () if row["NodeList"] in NO_NODES else tuple(expand_hostlist(row["NodeList"]))
    except ConnectorError as exc:
        raise ValueError(str(exc)) from None
    return SacctRecord(
        job_id=row["JobID"],
        job_id_raw=row["JobIDRaw"] or row["JobID"],
        name=row["JobName"],
        user=row["User"],
        nodes=nodes,
        start=parse_slurm_time(row["Start"]),
        end=parse_slurm_time(row["End"]),
        state=state,
        cancelled_by=cancelled_by,
        exit_code=row["ExitCode"],
        workdir=row["WorkDir"],
    )


def parse_slurm_time(text: str) -> datetime | None:
    """A Slurm time printed under ``TZ=UTC`` (``2026-11-02T10:14:07``), or None for Unknown/None."""
    text = text.strip()
    if text in NO_TIME:
        return None
    try:
        return datetime.strptime(text, "%Y-%m-%dT%H:%M:%S").replace(tzinfo=UTC)
    except ValueError:
        raise ValueError(f"{text!r} is not a Slurm time") from None


def parse_scontrol_job(line: str) -> dict[str, str]:
    """The ``Key=Value`` pairs of one ``scontrol show job -o`` line (values may hold spaces)."""
    pairs: dict[str, str] = {}
    text = line.strip()
    matches = list(SCONTROL_KEY.finditer(text))
    for index, match in enumerate(matches):
        end = matches[index + 1].start() if index + 1 < len(matches) else len(text)
        pairs.setdefault(match.group(1), text[match.end() : end].strip())
    return pairs
