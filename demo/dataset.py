"""The demo set: a month of failed attempts on three clusters, for the dashboard to show on first run.

``dgx-a`` is a Slurm cluster of DGX B200 nodes (syslog, Europe/Paris; jobs launched with srun or
torchrun); ``gke-ml`` a GKE cluster of A3 Ultra nodes whose workloads Kueue admits (raw dmesg, UTC);
``dgx-b`` a second Slurm cluster of DGX B200 nodes whose kernel logs are kept as ``dmesg -H`` prints
them (relative stamps) and whose users launch DeepSpeed over pdsh (one output file for every node,
lines labelled by host only). Most attempts are attributed; some are ambiguous or unattributed; some
are hangs; a few nodes are at fault again and again (a GPU that keeps falling off the bus, a flaky
InfiniBand cable, a GPU with failing memory). The intended diagnosis of each attempt is its kind's,
in ``demo.bundles``; nothing is written next to the bundles.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

from demo.bundles import KINDS, Written
from demo.draft import JOB_NAMES
from demo.sites import DGX_B200, DGX_B200_PDSH, GKE_A3_ULTRA, gke_nodes, kueue_job_id

DGX_A = tuple(f"dgx-b200-{n:04d}" for n in range(401, 433))
DGX_B = tuple(f"gpu-b200-{n:03d}" for n in range(101, 117))
SITES = {"dgx-a": DGX_B200, "dgx-b": DGX_B200_PDSH, "gke-ml": GKE_A3_ULTRA}
WINDOW = timedelta(days=30)

# (cluster, kind, repeat offender at fault or None, nodes); in no particular order: times are drawn.
PLAN = (
    ("dgx-a", "gpu-fallen-off-bus", "dgx-b200-0417", 4),
    ("dgx-a", "gpu-fallen-off-bus", "dgx-b200-0417", 8),
    ("dgx-a", "gpu-ecc-dbe", "dgx-b200-0417", 4),
    ("dgx-a", "ib-port-down", "dgx-b200-0423", 8),
    ("dgx-a", "ib-port-down", "dgx-b200-0423", 4),
    ("dgx-a", "gpu-nvlink", None, 4),
    ("dgx-a", "gpu-ecc-dbe", None, 4),
    ("dgx-a", "host-oom", None, 4),
    ("dgx-a", "cuda-oom", None, 2),
    ("dgx-a", "python-exception", None, 4),
    ("dgx-a", "nan-loss", None, 8),
    ("dgx-a", "import-error", None, 4),
    ("dgx-a", "lustre-outage", None, 4),
    ("dgx-a", "disk-full", None, 4),
    ("dgx-a", "slurm-time-limit", None, 4),
    ("dgx-a", "slurm-time-limit", None, 2),
    ("dgx-a", "slurm-preemption", None, 4),
    ("dgx-a", "user-cancelled", None, 2),
    ("dgx-a", "node-lost", None, 4),
    ("dgx-a", "nccl-timeouts-only", None, 8),
    ("dgx-a", "nccl-hang-flight-recorder", None, 8),
    ("dgx-a", "two-hardware-faults", None, 4),
    ("dgx-a", "nvswitch-fatal", None, 4),
    ("dgx-a", "gpu-thermal-slowdown", None, 4),
    ("dgx-a", "collective-hang", None, 4),
    ("dgx-b", "collective-hang", None, 4),
    ("dgx-b", "hang-after-completion", None, 2),
    ("dgx-b", "gpu-fallen-off-bus", "gpu-b200-107", 4),
    ("dgx-b", "gpu-fallen-off-bus", "gpu-b200-107", 2),
    ("dgx-b", "ib-port-down", None, 4),
    ("dgx-b", "python-exception", None, 4),
    ("dgx-b", "host-oom", None, 2),
    ("dgx-b", "slurm-time-limit", None, 4),
    ("gke-ml", "gpu-ecc-dbe", 11, 4),
    ("gke-ml", "gpu-ecc-dbe", 11, 2),
    ("gke-ml", "gpu-fallen-off-bus", None, 4),
    ("gke-ml", "roce-link-down", None, 4),
    ("gke-ml", "k8s-oomkilled", None, 2),
    ("gke-ml", "k8s-oomkilled", None, 4),
    ("gke-ml", "cuda-oom", None, 2),
    ("gke-ml", "kueue-pods-ready-timeout", None, 4),
    ("gke-ml", "kueue-preemption", None, 4),
    ("gke-ml", "nan-loss", None, 2),
    ("gke-ml", "nccl-timeouts-only", None, 4),
    ("gke-ml", "disk-full", None, 2),
)
# A failure the default pack has no rule for (a GPU overheating), recurring: three more attempts of it, the failure
# pattern a new user sees on the patterns page and drafts a rule from (docs/leads.md). Planned after the attempts
# above, with a random generator of its own, so that adding them left every other attempt as it was.
RECURRING = ("dgx-a", "gpu-thermal-slowdown", 3, 4)  # cluster, kind, more attempts, nodes
REQUEUED = "node-lost"  # Slurm requeues its job: a second attempt of the same job, which reaches its time limit
# A job that worked and then did not: its first attempt completed on the NCCL of the time, its resubmission (attempt 1,
# a day or more later, partly on other nodes) ran after the site's NCCL upgrade and hung in a collective: what the
# "What changed" view compares. Planned last, with a random generator of its own (the other attempts stay as they were).
UPGRADED = ("dgx-a", "training-completed", "nccl-timeouts-only", 4)  # cluster, good kind, failed kind, nodes


@dataclass(frozen=True)
class DemoAttempt:
    cluster: str
    kind: str
    job_id: str
    attempt: int
    nodes: tuple[str, ...]
    start: datetime
    culprit: str | None
    name: str
    seed: int

    @property
    def directory(self) -> str:
        return f"{self.cluster}/{self.job_id}-{self.attempt}"


def plan_demo_set(seed: int, *, now: datetime) -> list[DemoAttempt]:
    """The attempts of the demo set, oldest first: which kind, where and when."""
    if now.tzinfo is None:
        raise ValueError("now must be an aware datetime")
    rng = random.Random(f"demo-set:{seed}")
    pools = {"dgx-a": DGX_A, "dgx-b": DGX_B, "gke-ml": gke_nodes(seed, 16)}
    first = now - WINDOW
    offsets = sorted(rng.uniform(0, (WINDOW - timedelta(hours=16)).total_seconds()) for _ in PLAN)
    order = list(PLAN)
    rng.shuffle(order)
    slurm_jobs = {"dgx-a": rng.randrange(4_100_000, 4_200_000), "dgx-b": rng.randrange(880_000, 990_000)}
    attempts = []
    for index, ((cluster, kind, offender, count), offset) in enumerate(zip(order, offsets, strict=True)):
        start = (first + timedelta(seconds=offset)).replace(microsecond=0)
        pool = pools[cluster]
        culprit = pool[offender] if isinstance(offender, int) else offender
        nodes = _allocate(rng, pool, count, culprit)
        name = rng.choice(JOB_NAMES)
        if cluster in slurm_jobs:
            slurm_jobs[cluster] += rng.randrange(150, 2600)
            job_id = str(slurm_jobs[cluster])
        else:
            job_id = kueue_job_id(seed * 1000 + index, name)
        attempts.append(DemoAttempt(cluster, kind, job_id, 0, nodes, start, culprit, name, seed * 1000 + index))
        if kind == REQUEUED:
            again = start + timedelta(hours=6, minutes=rng.uniform(5, 40))
            others = [n for n in pool if n not in nodes]
            attempts.append(
                DemoAttempt(
                    cluster,
                    "slurm-time-limit",
                    job_id,
                    1,
                    _allocate(rng, others, count, None),
                    again,
                    None,
                    name,
                    seed * 1000 + index + 500,
                )
            )
    cluster, kind, times, count = RECURRING
    recurring = random.Random(f"demo-set-recurring:{seed}")
    for index in range(times):
        start = first + timedelta(seconds=recurring.uniform(0, (WINDOW - timedelta(hours=16)).total_seconds()))
        nodes = _allocate(recurring, pools[cluster], count, None)
        culprit = recurring.choice(nodes)
        slurm_jobs[cluster] += recurring.randrange(150, 2600)
        name = recurring.choice(JOB_NAMES)
        seed_of = seed * 1000 + 900 + index
        attempts.append(DemoAttempt(cluster, kind, str(slurm_jobs[cluster]), 0, nodes, start.replace(microsecond=0),
                                    culprit, name, seed_of))  # fmt: skip
    cluster, good_kind, failed_kind, count = UPGRADED
    upgraded = random.Random(f"demo-set-upgraded:{seed}")
    start = first + timedelta(seconds=upgraded.uniform(0, (WINDOW - timedelta(days=4)).total_seconds()))
    nodes = _allocate(upgraded, pools[cluster], count, None)
    slurm_jobs[cluster] += upgraded.randrange(150, 2600)
    name = upgraded.choice(JOB_NAMES)
    job_id = str(slurm_jobs[cluster])
    attempts.append(DemoAttempt(cluster, good_kind, job_id, 0, nodes, start.replace(microsecond=0), None, name,
                                seed * 1000 + 950))  # fmt: skip
    again = start + timedelta(days=upgraded.uniform(1, 3))
    moved = (*nodes[1:], next(n for n in pools[cluster] if n not in nodes))  # one node swapped for another
    attempts.append(DemoAttempt(cluster, failed_kind, job_id, 1, moved, again.replace(microsecond=0), None, name,
                                seed * 1000 + 951))  # fmt: skip
    return sorted(attempts, key=lambda a: a.start)


def _allocate(rng: random.Random, pool: tuple[str, ...] | list[str], count: int, culprit: str | None):
    """``count`` consecutive nodes of ``pool`` (as schedulers tend to give), including ``culprit`` if any."""
    if culprit is None:
        first = rng.randrange(0, len(pool) - count + 1)
    else:
        at = pool.index(culprit)
        first = min(max(0, at - rng.randrange(0, count)), len(pool) - count)
    return tuple(pool[first : first + count])


def write_demo_attempts(root: Path, seed: int = 1, *, now: datetime) -> list[Written]:
    """Write every attempt of the demo set under ``root/<cluster>/<job>-<attempt>``; their intended diagnoses."""
    written = []
    for planned in plan_demo_set(seed, now=now):
        written.append(
            KINDS[planned.kind].write(
                Path(root) / planned.directory,
                cluster=planned.cluster,
                job_id=planned.job_id,
                nodes=planned.nodes,
                start=planned.start,
                seed=planned.seed,
                site=SITES[planned.cluster],
                attempt=planned.attempt,
                culprit=planned.culprit,
                name=planned.name,
            )
        )
    return written


def write_demo_set(root: Path, seed: int = 1, *, now: datetime) -> list[Path]:
    """Write the demo set (about four dozen failed attempts, and one that worked) under ``root``; the bundles' paths,
    oldest first."""
    return [written.path for written in write_demo_attempts(root, seed, now=now)]
