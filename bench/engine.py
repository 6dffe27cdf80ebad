"""Engine benchmark: diagnose large bundles and compare with ripgrep over the same files.

    python bench/engine.py [--bundles 32x512 16x400] [--repeat 5] [--out var/bench]

For each bundle (NODESxMB: that many nodes, that many MB of logs) it generates (once, then reuses) a
deterministic bundle of realistic logs with a few failures buried in it, then runs, interleaved,
``manage.py diagnose`` on it in a child process and ``rg -c -f PATTERNS`` with the same patterns over
the same files, and prints each one's wall and CPU time (median of ``--repeat``), the ratios engine /
ripgrep and the engine's peak memory beside their targets. It also times the command's start-up:
``manage.py diagnose`` on a tiny bundle against ``python -c pass``, interleaved. The ratios, not the
absolute speeds, are what to compare across machines. The command runs without a database (the
default pack), as the engine test's ``diagnose_command`` does.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from engine import load_rules  # noqa: E402
from engine.prefilter import loosen  # noqa: E402

START = datetime(2026, 11, 2, 8, 0, tzinfo=UTC)
DURATION = timedelta(hours=6)
FAULT_NODE = 17
FAULT_AT = START + timedelta(hours=5, minutes=12)
VERSION = "1"  # bump when the generator changes, so a cached bundle is rebuilt
WALL_TARGET, CPU_TARGET, MEMORY_TARGET_MB = 1.25, 1.1, 150
NO_DATABASE = {**os.environ, "DATABASE_URL": "sqlite:////nonexistent/faultline-bench.sqlite3"}


def node_name(index: int) -> str:
    return f"dgx-{index:04d}"


def syslog_line(rng: random.Random, node: str, moment: datetime, uptime: float) -> str:
    stamp = moment.strftime("%b %e %H:%M:%S")
    choice = rng.random()
    if choice < 0.30:
        text = f"CRON[{rng.randint(1000, 999999)}]: (root) CMD (command -v debian-sa1 > /dev/null && debian-sa1 1 1)"
    elif choice < 0.45:
        text = f"chronyd[911]: Selected source 10.{rng.randint(0, 3)}.0.{rng.randint(1, 9)}"
    elif choice < 0.60:
        unit = rng.choice(["motd-news", "apt-daily", "logrotate", "systemd-tmpfiles-clean", "dcgm-exporter"])
        text = f"systemd[1]: {unit}.service: Deactivated successfully."
    elif choice < 0.75:
        text = (
            f"kernel: [{uptime:.6f}] EDAC MC{rng.randint(0, 7)}: 1 CE memory read error on "
            f"CPU_SrcID#{rng.randint(0, 1)}"
            f"_MC#{rng.randint(0, 3)}_Chan#{rng.randint(0, 2)}_DIMM#0 (channel:{rng.randint(0, 2)} slot:0 page:0x"
            f"{rng.randint(0, 2**24):x} offset:0x{rng.randint(0, 4095):x} grain:32 syndrome:0x0)"
        )
    elif choice < 0.85:
        pid, octet = rng.randint(1000, 999999), rng.randint(0, 255)
        text = f"sshd[{pid}]: Accepted publickey for root from 10.94.{octet}.61 port 62138"
    elif choice < 0.95:
        port, veth = rng.randint(1, 9), rng.randint(0, 2**24)
        text = f"kernel: [{uptime:.6f}] docker0: port {port}(veth{veth:06x}) entered forwarding state"
    else:
        text = f"slurmd[2211]: launch task StepId={rng.randint(100000, 999999)}.0 request from UID:1004"
    return f"{stamp} {node} {text}"


def app_line(rng: random.Random, node: str, index: int, moment: datetime, step: int) -> str:
    local = rng.randint(0, 7)
    rank = index * 8 + local
    choice = rng.random()
    if choice < 0.45:
        return (
            f"[default{local}]: [{moment:%Y-%m-%d %H:%M:%S}] iteration {step:>8}/  500000 | consumed samples: "
            f"{step * 512:>12} | elapsed time per iteration (ms): {rng.uniform(900, 1100):.1f} | learning rate: "
            f"{rng.uniform(1e-5, 3e-4):.3E} | global batch size:   512 | lm loss: {rng.uniform(1.4, 2.2):.6E} | "
            f"loss scale: 1.0 | grad norm: {rng.uniform(0.1, 0.9):.3f} | number of skipped iterations:   0"
        )
    if choice < 0.85:
        return (
            f"[default{local}]:{node}:{rng.randint(1000, 99999)}:{rng.randint(1000, 99999)} [{local}] NCCL INFO "
            f"Channel {rng.randint(0, 31):02d}/0 : {rank}[{local}] -> {(rank + 8) % 256}[{local}] [send] via NET/IB/"
            f"{rng.randint(0, 7)}/GDRDMA"
        )
    if choice < 0.97:
        shard = rng.randint(0, 64)
        return f"[default{local}]:[rank{rank}]: saving checkpoint shard {shard} to /lustre/ckpt/llm/step_{step}"
    return (
        f"[default{local}]:{node}:{rng.randint(1000, 99999)}:{rng.randint(1000, 99999)} [{local}] NCCL WARN "
        f"NET/Plugin: Failed to find ncclNetPlugin_v8 symbol."
    )


def generate(out: Path, nodes: int, size_mb: int, seed: int = 7) -> Path:
    """Write the bundle (about size_mb of logs over ``nodes`` nodes); reuse it when already there."""
    bundle = out / f"bundle-{nodes}n-{size_mb}mb-v{VERSION}"
    if (bundle / "attempt.json").exists():
        return bundle
    shutil.rmtree(bundle, ignore_errors=True)
    tmp = out / (bundle.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    names = [node_name(100 + i) for i in range(nodes)]
    per_file = size_mb * (1 << 20) // (nodes * 2)
    for index, node in enumerate(names):
        rng = random.Random(seed * 1000 + index)
        folder = tmp / "logs" / node
        folder.mkdir(parents=True)
        for stream, writer in (("syslog", syslog_line), ("train", app_line)):
            _write_stream(folder / f"{stream}.log", per_file, rng, node, index, stream, writer)
    (tmp / "logs" / "slurm-77001.out").write_text(
        "".join(f"srun: error: {n}: tasks {i * 8}-{i * 8 + 7}: Exited with exit code 1\n" for i, n in enumerate(names))
    )
    attempt = {
        "cluster": "bench", "scheduler": "slurm", "job_id": "77001", "attempt": 0, "nodes": names,
        "start": START.isoformat().replace("+00:00", "Z"), "end": (START + DURATION).isoformat().replace("+00:00", "Z"),
        "state": "FAILED", "exit_code": "1:0", "tasks_per_node": 8,
    }  # fmt: skip
    (tmp / "attempt.json").write_text(json.dumps(attempt, indent=1))
    tmp.rename(bundle)
    return bundle


def _write_stream(path: Path, size: int, rng: random.Random, node: str, index: int, stream: str, writer) -> None:
    lines_estimate = size // (140 if stream == "syslog" else 230)
    step_seconds = DURATION.total_seconds() / max(lines_estimate, 1)
    fault_line = int((FAULT_AT - START).total_seconds() / step_seconds)
    timeout_line = int((FAULT_AT - START + timedelta(minutes=10)).total_seconds() / step_seconds)
    written, number, chunk = 0, 0, []
    with open(path, "w") as handle:
        while written < size:
            moment = START + timedelta(seconds=number * step_seconds)
            if stream == "syslog":
                line = writer(rng, node, moment, 40000 + number * step_seconds)
                if index == FAULT_NODE and number == fault_line:
                    line = (
                        f"{moment:%b %e %H:%M:%S} {node} kernel: NVRM: Xid (PCI:0000:5d:00): 79, "
                        "GPU has fallen off the bus."
                    )
                elif number % 50000 == 49999:
                    line = (
                        f"{moment:%b %e %H:%M:%S} {node} kernel: NVRM: Xid (PCI:0000:3b:00): 63, Row Remapper: pending"
                    )
            else:
                line = writer(rng, node, index, moment, 100000 + number // 40)
                if index != FAULT_NODE and number == timeout_line:
                    line = (
                        f"[default0]:[rank{index * 8}]:[E{moment:%m%d %H:%M:%S}.100 ProcessGroupNCCL.cpp:607] "
                        f"[Rank {index * 8}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=881, "
                        f"OpType=ALLREDUCE, Timeout(ms)=600000) ran for 600081 milliseconds before timing out."
                    )
            chunk.append(line)
            written += len(line) + 1
            number += 1
            if len(chunk) >= 20000:
                handle.write("\n".join(chunk) + "\n")
                chunk = []
        if chunk:
            handle.write("\n".join(chunk) + "\n")


def rg_patterns(out: Path) -> Path:
    """The pack's patterns as the engine's prefilter sees them (rg joins them, so captures go)."""
    ruleset = load_rules(ROOT / "rules" / "packs" / "default")
    path = out / "patterns.txt"
    path.write_text("".join(loosen(p) + "\n" for rule in ruleset.rules for p in rule.patterns))
    return path


@dataclass
class Run:
    wall: float
    cpu: float  # user + system seconds of the child
    peak_mb: float  # the child's peak resident memory
    stdout: str


def run_child(command: list[str], ok: tuple[int, ...] = (0,)) -> Run:
    """Run ``command`` and measure it alone: wall time, and CPU time and peak memory from its own rusage."""
    began = time.perf_counter()
    child = subprocess.Popen(command, cwd=ROOT, env=NO_DATABASE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    stdout_chunks = []
    while chunk := child.stdout.read(1 << 16):
        stdout_chunks.append(chunk)
    stderr = child.stderr.read()
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - began
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode not in ok:
        sys.exit(f"{command[0]} failed ({child.returncode}): {stderr.decode()[-2000:]}")
    return Run(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, b"".join(stdout_chunks).decode())


def bench_bundle(args, nodes: int, size_mb: int, patterns: Path) -> None:
    began = time.perf_counter()
    bundle = generate(args.out, nodes, size_mb)
    size = sum(p.stat().st_size for p in bundle.rglob("*") if p.is_file())
    files = sum(1 for _ in bundle.rglob("*.log"))
    ready = time.perf_counter() - began
    print(f"\nbundle {bundle.name}: {size / (1 << 20):,.0f} MB in {files} files (ready in {ready:.1f} s)")
    engine_runs, rg_runs = [], []
    for _ in range(args.repeat):  # interleaved, so both see the same machine load and page cache
        engine_runs.append(run_child([sys.executable, "manage.py", "diagnose", str(bundle)]))
        rg = ["rg", "-c", "-f", str(patterns), "--no-ignore", "--hidden", str(bundle / "logs")]
        rg_runs.append(run_child(rg, ok=(0, 1)))
    mb = size / (1 << 20)
    for label, runs in (("engine: ", engine_runs), ("ripgrep:", rg_runs)):
        wall = statistics.median(r.wall for r in runs)
        cpu = statistics.median(r.cpu for r in runs)
        listed = ", ".join(f"{r.wall:.2f}" for r in runs)
        print(f"  {label} {wall:6.2f} s wall ({mb / wall:,.0f} MB/s), {cpu:6.2f} s CPU; walls: {listed}")
    wall = statistics.median(e.wall / r.wall for e, r in zip(engine_runs, rg_runs, strict=True))
    cpu = statistics.median(e.cpu / r.cpu for e, r in zip(engine_runs, rg_runs, strict=True))
    peak = max(r.peak_mb for r in engine_runs)
    print(f"  engine / ripgrep: wall {wall:.2f} (target <= {WALL_TARGET}), CPU {cpu:.2f} (target <= {CPU_TARGET}); "
          f"median of the {args.repeat} interleaved pairs")  # fmt: skip
    print(f"  engine peak RSS: {peak:,.0f} MB (target < {MEMORY_TARGET_MB} MB)")
    result = json.loads(engine_runs[-1].stdout)
    root = result["root_cause"] or {}
    print(f"  diagnosis: {result['outcome']} {result['domain']}/{result['subdomain']} {root.get('nodes')}")


def bench_start_up(args) -> None:
    """``manage.py diagnose`` on a tiny bundle against ``python -c pass``: the command's fixed cost."""
    bundle = generate(args.out, 1, 0)
    command, python = [], []
    for _ in range(args.repeat * 2):
        command.append(run_child([sys.executable, "manage.py", "diagnose", str(bundle)]))
        python.append(run_child([sys.executable, "-c", "pass"]))
    cmd, ref = statistics.median(r.wall for r in command), statistics.median(r.wall for r in python)
    print(f"\nstart-up: manage.py diagnose on a tiny bundle {cmd:.3f} s, python -c pass {ref:.3f} s "
          f"(medians of {len(command)} interleaved): {cmd / ref:.1f}x, {cmd - ref:.3f} s of its own")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bundles", nargs="+", default=["32x512", "16x400"], help="NODESxMB, each")
    parser.add_argument("--out", type=Path, default=ROOT / "var" / "bench")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    if shutil.which("rg") is None:
        sys.exit("bench: ripgrep (rg) is needed for the reference run: apt-get install ripgrep")
    patterns = rg_patterns(args.out)
    print(f"patterns: {len(patterns.read_text().splitlines())} (the default pack's, as the prefilter sees them); "
          f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}")  # fmt: skip
    bench_start_up(args)
    for spec in args.bundles:
        nodes, size_mb = (int(v) for v in spec.split("x"))
        bench_bundle(args, nodes, size_mb, patterns)
    print(f"\nload average at the end (1, 5, 15 min): {' '.join(f'{v:.1f}' for v in os.getloadavg())}")


if __name__ == "__main__":
    main()
