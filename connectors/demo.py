"""A demo scheduler (the ``demo`` kind), for trying the hand-offs where no cluster is at hand (``make run``'s demo
data): a watched folder of bundles, as ``folder``, whose drains and resumes are recorded in a file of the folder
instead of reaching any node. Never a real cluster's connector: every answer it gives says so.

Settings: those of ``folder`` (``path``, ``settle_seconds``), and ``unreachable_nodes``, nodes whose drain and resume
fail as a scheduler that cannot be reached would (to try a failure). The record is ``path/.demo-nodes.json`` (a hidden
entry: the folder's scan skips it): each node's state, reason and time, and the log of every command, newest last.
"""

from __future__ import annotations

import fcntl
import json
import os
import tempfile
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path

from connectors.base import ConnectorError
from connectors.folder import WatchedFolder
from connectors.settings_reader import Settings

RECORD = ".demo-nodes.json"
DEMO = "demo scheduler, no node touched"


class DemoScheduler(WatchedFolder):
    """A watched folder whose ``drain_node`` and ``resume_node`` (``connectors.base.NodeControl``) record the command
    in ``path/.demo-nodes.json``."""

    def __init__(self, name: str, settings: Mapping):
        reader = Settings(name, settings)
        self.unreachable = frozenset(reader.texts("unreachable_nodes"))
        super().__init__(name, {key: value for key, value in settings.items() if key != "unreachable_nodes"})
        self.record = self.path / RECORD

    def drain_node(self, node: str, reason: str) -> str:
        return self._command(node, "DRAIN", reason)

    def resume_node(self, node: str) -> str:
        return self._command(node, "IDLE", "")

    def node_states(self) -> dict[str, dict]:
        """Each node the demo drained or resumed: its ``state``, ``reason`` and ``time``."""
        return self._read()["nodes"]

    def _command(self, node: str, state: str, reason: str) -> str:
        action = "resume" if state == "IDLE" else "drain"
        if node in self.unreachable:
            raise ConnectorError(f"{self.name}: {node} did not answer ({DEMO}: listed in unreachable_nodes)")
        if not self.path.is_dir():
            raise ConnectorError(f"{self.path}: the demo scheduler's folder is not a directory", permanent=True)
        now = datetime.now(UTC).isoformat(timespec="seconds")
        with open(self.path / f"{RECORD}.lock", "a") as lock:  # one writer at a time (web process, workers)
            fcntl.flock(lock, fcntl.LOCK_EX)
            record = self._read()
            record["nodes"][node] = {"state": state, "reason": reason, "time": now}
            record["log"].append({"time": now, "node": node, "action": action, "reason": reason})
            self._write(record)
        return f"State={state}" + (f" Reason={reason}" if reason else "") + f" ({DEMO}: recorded in {self.record})"

    def _read(self) -> dict:
        try:
            record = json.loads(self.record.read_text())
        except FileNotFoundError:
            return {"nodes": {}, "log": []}
        except (OSError, ValueError) as exc:
            raise ConnectorError(f"{self.record}: cannot read the demo scheduler's record: {exc}") from None
        if (
            not isinstance(record, dict)
            or not isinstance(record.get("nodes"), dict)
            or not isinstance(record.get("log"), list)
        ):
            raise ConnectorError(f"{self.record}: not a demo scheduler's record (nodes, log)", permanent=True)
        return record

    def _write(self, record: dict) -> None:
        """Write the record whole or not at all (a file beside it, renamed over it)."""
        handle, temporary = tempfile.mkstemp(prefix=".demo-nodes-", dir=self.path)
        try:
            with os.fdopen(handle, "w") as out:
                json.dump(record, out, indent=1)
            os.replace(temporary, self.record)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
