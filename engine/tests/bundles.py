"""Build small attempt bundles (docs/bundles.md) for tests: the one bundle builder of the test
suite. The tests of the other packages reach it through the root conftest's fixtures (``write_bundle``,
``make_bundle``, ``diagnose_bundle``)."""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

from engine import Engine, load_rules
from engine.bundle import FLIGHT_RECORDER, load_bundle

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
    traces: dict[str, bytes] | None = None,
    **attempt,
) -> Path:
    """Write a bundle under ``root``: ``logs`` maps paths under logs/ to lines (or raw text/bytes), ``traces``
    the names of Flight Recorder dumps (``rank_0``) to their bytes."""
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
    for name, data in (traces or {}).items():
        path = root / FLIGHT_RECORDER / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
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


START = datetime(2026, 11, 2, 10, 0, tzinfo=UTC)  # when a GPU-off-the-bus attempt starts unless told


def gpu_off_the_bus(
    directory: Path,
    *,
    nodes: tuple[str, ...] = tuple(NODES),
    faulty: str | None = "node02",
    start: datetime = START,
    slow_lines: int = 0,
    **attempt,
) -> Path:
    """Write, into ``directory``, a 30-minute attempt of two ranks per node whose GPU fell off the bus: an
    Xid 79 line in the ``faulty`` node's syslog (none when ``faulty`` is None) and NCCL watchdog timeouts of
    every rank in the workload log ten minutes later. ``slow_lines`` adds matching lines (Xid 13 on the
    first node) that make the analysis take longer (about 0.15 ms each)."""
    fault = start + timedelta(minutes=4)
    logs: dict[str, list[str]] = {}
    for index, node in enumerate(nodes):
        lines = [
            f"{_stamp(start + timedelta(seconds=s))} {node} kernel: eth0: link up, 100Gbps, full duplex" for s in (1, 2)
        ]
        if node == faulty:
            lines.append(
                f"{_stamp(fault)} {node} kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', name=<unknown>, "
                "GPU has fallen off the bus."
            )
        if index == 0:
            lines += [
                f"{_stamp(start + timedelta(seconds=60 + i // 10))} {node} kernel: NVRM: Xid (PCI:0000:3b:00): 13, "
                f"pid=4242, Graphics Exception: ESR 0x{i:x}"
                for i in range(slow_lines)
            ]
        logs[f"{node}/syslog.log"] = lines
    timeout = fault + timedelta(minutes=10)
    ranks = range(len(nodes) * 2)
    logs["train.log"] = [f"[rank{r}]: {_iso(start + timedelta(seconds=5))} INFO step 1 loss 2.31" for r in ranks] + [
        f"[rank{r}]:[E ProcessGroupNCCL.cpp:616] [Rank {r}] Watchdog caught collective operation timeout: "
        f"WorkNCCL(SeqNum=9, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600023 "
        f"milliseconds before timing out. {_iso(timeout)}"
        for r in ranks
    ]
    record = {"name": "pretrain-7b", "nodes": list(nodes), "tasks_per_node": 2, **attempt}
    return write_bundle(directory, logs=logs, start=_iso(start), end=_iso(start + timedelta(minutes=30)), **record)


def _stamp(moment: datetime) -> str:
    return moment.strftime("%b %e %H:%M:%S")


def _iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


class Unseekable(io.RawIOBase):
    """A stream of ``data`` that cannot seek (a pipe, a socket)."""

    def __init__(self, data: bytes):
        self.data = io.BytesIO(data)

    def readable(self):
        return True

    def readinto(self, buffer):
        return self.data.readinto(buffer)
