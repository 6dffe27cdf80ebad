"""The Slurm scheduler connector: ``sacct`` discovery, ``scontrol`` output paths, job output files, and draining and
resuming a node (``scontrol update``).

Settings (all optional but ``cluster``):

- ``cluster``: the cluster's name in Faultline.
- ``command_prefix``: run the Slurm commands through this (e.g. ``["ssh", "login01"]``); default local.
- ``command_timeout``: seconds per command (default 60).
- ``states``: the final states that make an attempt a failure (default ``FAILURE_STATES``).
- ``lookback_seconds``: how far back the first poll looks (default one day).
- ``overlap_seconds``: each poll looks this far before the cursor again, for accounting records that
  arrive late (default 300); attempts seen twice are deduplicated by the pipeline.
- ``path_map``: cluster path prefix -> local path prefix, for job output on a shared filesystem.
- ``output_templates``: where to look for the job's output when slurmctld has forgotten the job
  (``{workdir}``, ``{job_id}``, ``{name}``, ``{user}``); default ``["{workdir}/slurm-{job_id}.out"]``.
- ``slurmctld_log``: the controller's log file, read as the ``slurmctld`` stream when set.
- ``flight_recorder_path``: the folder on the shared filesystem where the job's PyTorch Flight Recorder dumps are
  (its ``TORCH_FR_DUMP_TEMP_FILE`` prefix points into it), with the placeholders of ``output_templates`` and
  ``{node}`` (a folder per node: the ranks whose dumps a node's folder holds ran on that node).
- ``timezone``: the IANA zone of log timestamps that carry none (default ``UTC``).

The cursor is the end time (RFC 3339, UTC) of the last job seen to end.
"""

from __future__ import annotations

import shlex
import subprocess
from collections import defaultdict
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from connectors.base import ConnectorError, DiscoveredAttempt, record_time
from connectors.settings_reader import Settings
from connectors.slurm.records import SACCT_FIELDS, SacctRecord, parse_sacct, parse_scontrol_job
from connectors.trace_files import DumpFiles, check_template, fill
from engine.bundle import rfc3339
from engine.context import Attempt, AttemptContext, LogStream, SourceReport, TraceFile

FAILURE_STATES = ("FAILED", "TIMEOUT", "NODE_FAIL", "CANCELLED", "PREEMPTED", "OUT_OF_MEMORY", "BOOT_FAIL",
                  "DEADLINE", "REQUEUED")  # fmt: skip
PLACEHOLDERS = frozenset({"workdir", "job_id", "name", "user"})
PERMANENT_HINTS = ("unrecognized option", "invalid option", "Invalid field", "not configured with slurmdbd",
                   "accounting storage is disabled", "No such file or directory", "command not found")  # fmt: skip


class SlurmScheduler:
    def __init__(self, name: str, settings: Mapping):
        self.name = name
        reader = Settings(name, settings)
        self.cluster = reader.text("cluster", required=True)
        self.command_prefix = reader.texts("command_prefix")
        self.command_timeout = reader.number("command_timeout", 60.0, minimum=1.0)
        self.states = frozenset(reader.texts("states", FAILURE_STATES))
        self.lookback = timedelta(seconds=reader.number("lookback_seconds", 86400.0))
        self.overlap = timedelta(seconds=reader.number("overlap_seconds", 300.0))
        self.path_map = reader.mapping("path_map")
        self.output_templates = reader.texts("output_templates", ["{workdir}/slurm-{job_id}.out"])
        self.slurmctld_log = reader.text("slurmctld_log")
        self.flight_recorder_path = check_template(reader, "flight_recorder_path", PLACEHOLDERS | {"node"})
        self.timezone = reader.text("timezone", "UTC")
        try:
            ZoneInfo(self.timezone)
        except (ZoneInfoNotFoundError, ValueError):
            raise reader.error("timezone", f"names no known time zone: {self.timezone!r}") from None
        reader.finish()
        self.skipped: list[str] = []

    # -- discovery --

    def discover(self, cursor: str | None) -> tuple[list[DiscoveredAttempt], str | None]:
        now = datetime.now(UTC).replace(microsecond=0)
        since = (record_time(cursor, "slurm cursor") - self.overlap) if cursor else now - self.lookback
        output = self.run(
            ["sacct", "-a", "-P", "-n", "-X", "-D", "-S", _slurm_time(since), "-E", _slurm_time(now),
             "-o", ",".join(SACCT_FIELDS)]
        )  # fmt: skip
        records, self.skipped = parse_sacct(output)
        ended = [r for r in records if r.end is not None]
        failed = [r for r in ended if r.state in self.states and r.end >= since]
        for record in failed:
            if not record.started:
                self.skipped.append(f"job {record.job_id}: {record.state} before it started; not an attempt")
        failed = [r for r in failed if r.started]
        numbers = self.attempt_numbers(failed)
        details = self.job_details({r.job_id for r in failed})
        found = []
        for record in failed:
            info = details.get(record.job_id, {})
            number = numbers[(record.job_id_raw, record.start, record.end)]
            # scontrol describes the job's latest run only: its Reason belongs to the run in that state.
            reason = info.get("Reason", "") if info.get("JobState") == record.state else ""
            attempt = self.attempt_of(record, number, reason)
            extra = {"job_id_raw": record.job_id_raw, "workdir": info.get("WorkDir") or record.workdir}
            for key, field in (("stdout", "StdOut"), ("stderr", "StdErr")):
                if info.get(field) and info[field] != "(null)":
                    extra[key] = info[field]
            found.append(DiscoveredAttempt(attempt=attempt, extra=extra))
        found.sort(key=lambda d: (d.attempt.end, d.attempt.job_id, d.attempt.attempt))
        latest = max((r.end for r in ended), default=None)
        if latest is None:
            new_cursor = cursor or rfc3339(since)
        else:
            new_cursor = rfc3339(max(latest, record_time(cursor, "slurm cursor")) if cursor else latest)
        return found, new_cursor

    def attempt_numbers(self, records: Sequence[SacctRecord]) -> dict[tuple, int]:
        """The attempt number of each run: its place among all runs of its job (requeues count up)."""
        if not records:
            return {}
        ids = sorted({r.job_id_raw for r in records})
        output = self.run(["sacct", "-a", "-P", "-n", "-X", "-D", "-j", ",".join(ids), "-o", ",".join(SACCT_FIELDS)])
        history, _ = parse_sacct(output)
        runs: dict[str, list[SacctRecord]] = defaultdict(list)
        for record in [*history, *records]:
            if record.started:
                runs[record.job_id_raw].append(record)
        numbers = {}
        for job_runs in runs.values():
            keys = sorted({(r.start, r.end or datetime.max.replace(tzinfo=UTC)) for r in job_runs})
            for record in job_runs:
                key = (record.start, record.end or datetime.max.replace(tzinfo=UTC))
                numbers[(record.job_id_raw, record.start, record.end)] = keys.index(key)
        return numbers

    def job_details(self, job_ids: set[str]) -> dict[str, dict[str, str]]:
        """``scontrol show job -o`` of each job slurmctld still remembers (StdOut, StdErr, WorkDir)."""
        details = {}
        for job_id in sorted(job_ids):
            try:
                output = self.run(["scontrol", "-o", "show", "job", job_id])
            except ConnectorError as exc:
                if "Invalid job id" not in str(exc):
                    self.skipped.append(f"job {job_id}: scontrol failed, output paths unknown: {exc}")
                continue
            for line in output.splitlines():
                pairs = parse_scontrol_job(line)
                if pairs.get("JobId"):
                    details.setdefault(job_id, pairs)
        return details

    def attempt_of(self, record: SacctRecord, number: int, reason: str) -> Attempt:
        """The attempt of one sacct run; ``reason`` is scontrol's (sacct's Reason is the last *pending* reason)."""
        reasons = [reason] if reason and reason not in ("None", "(null)") else []
        if record.cancelled_by:
            reasons.append(f"cancelled by uid {record.cancelled_by}")
        return Attempt(
            cluster=self.cluster,
            scheduler="slurm",
            job_id=record.job_id,
            attempt=number,
            nodes=record.nodes,
            start=record.start,
            end=record.end,
            state=record.state,
            name=record.name,
            user=record.user,
            exit_code=record.exit_code,
            reason="; ".join(reasons),
            timezone=self.timezone,
        )

    # -- one attempt's job output --

    def attempt_context(self, discovered: DiscoveredAttempt) -> AttemptContext:
        attempt, extra = discovered.attempt, discovered.extra
        streams, reports = [], []
        stdout = extra.get("stdout")
        stderr = extra.get("stderr")
        candidates = [stdout] if stdout else self.output_candidates(attempt, extra.get("workdir", ""))
        path = next((p for p in (self.local_path(c) for c in candidates) if p.is_file()), None)
        if path is None:
            shown = ", ".join(str(self.local_path(c)) for c in candidates)
            reports.append(SourceReport("stdout", "app", "missing", f"{self.name}: job output not found ({shown})"))
        else:
            streams.append(LogStream.from_path("logs/stdout.out", "stdout", None, path))
        if stderr and stderr != stdout:
            err_path = self.local_path(stderr)
            if err_path.is_file():
                streams.append(LogStream.from_path("logs/stderr.err", "stderr", None, err_path))
            else:
                reports.append(SourceReport("stderr", "app", "missing", f"{self.name}: {err_path} not found"))
        if self.slurmctld_log:
            log = Path(self.slurmctld_log)
            if log.is_file():
                streams.append(LogStream.from_path("logs/slurmctld.log", "slurmctld", None, log))
            else:
                reports.append(SourceReport("slurmctld", "scheduler", "missing", f"{self.name}: {log} not found"))
        traces = ()
        if self.flight_recorder_path:
            dumps = self.flight_recorder_dumps(attempt, extra.get("workdir", ""))
            attempt, traces = dumps.attempt(attempt), dumps.traces()
            reports += dumps.reports(self.dump_folders(attempt, extra.get("workdir", "")))
        return AttemptContext(attempt=attempt, streams=tuple(streams), reports=tuple(reports), flight_recorder=traces)

    def output_candidates(self, attempt: Attempt, workdir: str) -> list[str]:
        fields = {"workdir": workdir, "job_id": attempt.job_id, "name": attempt.name, "user": attempt.user}
        return [template.format(**fields) for template in self.output_templates]

    def dump_folders(self, attempt: Attempt, workdir: str) -> list[str]:
        """The local folders of the job's Flight Recorder dumps: one, or one per node with ``{node}``."""
        fields = {"workdir": workdir, "job_id": attempt.job_id, "name": attempt.name, "user": attempt.user}
        nodes = attempt.nodes if "{node}" in self.flight_recorder_path else ("",)
        return [str(self.local_path(fill(self.flight_recorder_path, **fields, node=node))) for node in nodes]

    def flight_recorder_dumps(self, attempt: Attempt, workdir: str) -> DumpFiles:
        """The dumps in the job's folder(s) on the shared filesystem; with ``{node}``, each placed on its node."""
        dumps = DumpFiles(self.name)
        per_node = "{node}" in self.flight_recorder_path
        for node, folder in zip(attempt.nodes if per_node else (None,), self.dump_folders(attempt, workdir),
                                strict=True):  # fmt: skip
            try:
                entries = sorted(Path(folder).iterdir())
            except OSError:
                continue  # no folder: nothing dumped there
            for path in entries:
                try:
                    if path.is_file():
                        dumps.add(path.name, path.stat().st_size, node, str(path),
                                  lambda ref, path=path: TraceFile.from_path(ref, path))  # fmt: skip
                except OSError as error:
                    dumps.problems.append(f"{path}: unreadable ({error.strerror})")
        return dumps

    def local_path(self, cluster_path: str) -> Path:
        """A path on the cluster as this machine sees it (``path_map``: longest matching prefix wins)."""
        for prefix in sorted(self.path_map, key=len, reverse=True):
            if cluster_path == prefix or cluster_path.startswith(prefix.rstrip("/") + "/"):
                return Path(self.path_map[prefix] + cluster_path[len(prefix) :])
        return Path(cluster_path)

    # -- node control (the hand-offs' drains) --

    def drain_node(self, node: str, reason: str) -> str:
        """``scontrol update NodeName=<node> State=DRAIN Reason=<reason>``: running jobs finish, no new ones start."""
        self.run(["scontrol", "update", f"NodeName={node}", "State=DRAIN", f"Reason={reason}"])
        return self.node_state(node)

    def resume_node(self, node: str) -> str:
        self.run(["scontrol", "update", f"NodeName={node}", "State=RESUME"])
        return self.node_state(node)

    def node_state(self, node: str) -> str:
        """The node's ``State`` and ``Reason`` as ``scontrol show node`` gives them."""
        pairs = parse_scontrol_job(self.run(["scontrol", "-o", "show", "node", node]))
        reason = pairs.get("Reason", "")
        return f"State={pairs.get('State', '?')}" + (f" Reason={reason}" if reason and reason != "(null)" else "")

    # -- commands --

    def run(self, args: list[str]) -> str:
        """Run a Slurm command with ``TZ=UTC`` (through ``command_prefix``) and return its stdout."""
        command = ["env", "TZ=UTC", *args]
        if self.command_prefix:
            command = [*self.command_prefix, shlex.join(command)]
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=self.command_timeout, check=False)
        except FileNotFoundError:
            raise ConnectorError(f"{self.name}: {command[0]} not found", permanent=True) from None
        except subprocess.TimeoutExpired:
            raise ConnectorError(f"{self.name}: {args[0]} timed out after {self.command_timeout:g} s") from None
        if done.returncode != 0:
            message = (done.stderr or done.stdout).strip().replace("\n", "; ")[:500]
            permanent = any(hint in message for hint in PERMANENT_HINTS)
            raise ConnectorError(f"{self.name}: {args[0]} exited {done.returncode}: {message}", permanent=permanent)
        return done.stdout


def _slurm_time(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S")
