"""Build small attempt bundles (CONTRACTS.md section 1) for tests."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from engine import Engine, load_rules
from engine.bundle import load_bundle

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_PACK = ROOT / "rules" / "packs" / "default"
NODES = ["node01", "node02", "node03", "node04"]

_engines: dict[str, Engine] = {}


def attempt_record(**overrides) -> dict:
    record = {
        "cluster": "dgx-a",
        "scheduler": "slurm",
        "job_id": "48213",
        "attempt": 0,
        "name": "llama-pretrain",
        "user": "alice",
        "nodes": list(NODES),
        "start": "2026-11-02T09:00:00Z",
        "end": "2026-11-02T10:30:00Z",
        "state": "FAILED",
        "exit_code": "1:0",
        "tasks_per_node": 8,
    }
    record.update(overrides)
    return record


def write_bundle(
    root: Path,
    *,
    logs: dict[str, list[str] | str | bytes] | None = None,
    events: dict[str, list[dict]] | None = None,
    metrics: dict[str, dict] | None = None,
    **attempt,
) -> Path:
    """Write a bundle under ``root``: ``logs`` maps paths under logs/ to lines (or raw text/bytes)."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "attempt.json").write_text(json.dumps(attempt_record(**attempt), indent=1))
    for relative, content in (logs or {}).items():
        path = root / "logs" / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content if isinstance(content, str) else "\n".join(content) + "\n")
    for name, items in (events or {}).items():
        path = root / "events" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(items))
    for name, body in (metrics or {}).items():
        path = root / "metrics" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(body))
    return root


def default_engine() -> Engine:
    if "default" not in _engines:
        _engines["default"] = Engine(load_rules(DEFAULT_PACK))
    return _engines["default"]


def diagnose_bundle(path: Path, engine: Engine | None = None) -> dict:
    return (engine or default_engine()).diagnose(load_bundle(path))


def query_range(name: str, series: list[tuple[dict, list[tuple[float, float]]]]) -> dict:
    """A Prometheus query_range response body."""
    return {
        "status": "success",
        "data": {
            "resultType": "matrix",
            "result": [
                {"metric": {"__name__": name, **labels}, "values": [[t, str(v)] for t, v in samples]}
                for labels, samples in series
            ],
        },
    }


def diagnose_command(*args: str) -> subprocess.CompletedProcess:
    """Run ``manage.py diagnose`` as a process, as a user would, with no database to read a rule set
    from: it uses the default pack, the rule set a fresh store starts with (revision 1)."""
    environment = {**os.environ, "DATABASE_URL": "sqlite:////nonexistent/faultline.sqlite3"}
    return subprocess.run(
        [sys.executable, "manage.py", "diagnose", *args], cwd=ROOT, env=environment, capture_output=True, text=True,
        timeout=120,
    )  # fmt: skip
