"""Small attempt bundles the tests write themselves (CONTRACTS.md section 1).

The default bundle is a GPU that fell off the bus: an Xid 79 line in the faulty node's syslog, and
NCCL watchdog timeouts of every rank in the workload log about ten minutes later.
"""

import io
import json
import tarfile
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

START = datetime(2026, 11, 2, 10, 0, tzinfo=UTC)


def write_bundle(
    root: Path,
    *,
    cluster: str = "dgx-a",
    job_id: str = "48213",
    attempt: int = 0,
    nodes: tuple[str, ...] = ("node01", "node02", "node03", "node04"),
    faulty: str | None = "node02",
    user: str = "alice",
    state: str = "FAILED",
    start: datetime = START,
    slow_lines: int = 0,
    **fields,
) -> Path:
    """Write a bundle under ``root`` and return its directory. ``slow_lines`` adds matching lines
    (Xid 13 on the first node) that make the analysis take longer (about 0.15 ms each)."""
    root.mkdir(parents=True, exist_ok=True)
    bundle = Path(tempfile.mkdtemp(prefix=f"{cluster}-{job_id}-{attempt}-", dir=root))
    end = start + timedelta(minutes=30)
    record = {
        "cluster": cluster,
        "scheduler": "slurm",
        "job_id": job_id,
        "attempt": attempt,
        "name": "pretrain-7b",
        "user": user,
        "nodes": list(nodes),
        "start": start.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "end": end.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "state": state,
        "exit_code": "1:0",
        "tasks_per_node": 2,
        **fields,
    }
    (bundle / "attempt.json").write_text(json.dumps(record, indent=2))
    fault = start + timedelta(minutes=4)
    for index, node in enumerate(nodes):
        lines = [
            f"{stamp(start + timedelta(seconds=s))} {node} kernel: eth0: link up, 100Gbps, full duplex" for s in (1, 2)
        ]
        if node == faulty:
            lines.append(
                f"{stamp(fault)} {node} kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', name=<unknown>, "
                "GPU has fallen off the bus."
            )
        if index == 0:
            lines += [
                f"{stamp(start + timedelta(seconds=60 + i // 10))} {node} kernel: NVRM: Xid (PCI:0000:3b:00): 13, "
                f"pid=4242, Graphics Exception: ESR 0x{i:x}"
                for i in range(slow_lines)
            ]
        log = bundle / "logs" / node / "syslog.log"
        log.parent.mkdir(parents=True)
        log.write_text("\n".join(lines) + "\n")
    timeout = fault + timedelta(minutes=10)
    ranks = len(nodes) * 2
    workload = [f"[rank{r}]: {iso(start + timedelta(seconds=5))} INFO step 1 loss 2.31" for r in range(ranks)]
    workload += [
        f"[rank{r}]:[E ProcessGroupNCCL.cpp:616] [Rank {r}] Watchdog caught collective operation timeout: "
        f"WorkNCCL(SeqNum=9, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600023 "
        f"milliseconds before timing out. {iso(timeout)}"
        for r in range(ranks)
    ]
    (bundle / "logs" / "train.log").write_text("\n".join(workload) + "\n")
    return bundle


def stamp(moment: datetime) -> str:
    return moment.strftime("%b %e %H:%M:%S")


def iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def tar_gz(bundle: Path, *, top: str | None = "bundle") -> bytes:
    """The bundle directory as a .tar.gz, inside one top-level directory ``top`` (or at the top)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        archive.add(bundle, arcname=top or ".")
    return buffer.getvalue()


def tar_gz_members(members: list[tuple[tarfile.TarInfo, bytes | None]]) -> bytes:
    """A .tar.gz of hand-made members (for archives no honest tool would write)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for info, data in members:
            if data is not None:
                info.size = len(data)
            archive.addfile(info, io.BytesIO(data) if data is not None else None)
    return buffer.getvalue()
