"""What a cluster looks like from its logs: scheduler, hardware, how system logs are collected, names.

A kind writes its bundle for one ``Site``. The demo set uses one site per cluster; a single bundle
takes a site varied by its seed (time zone, log collection, how jobs are launched), so that the same
failure is seen through the different forms real systems print.

How jobs are launched decides the shape of the workload's output: ``srun`` (one task per GPU, every
line labelled with its rank), ``torchrun`` (one agent per node, a file per node, workers labelled
``[default3]:``), ``pod`` (Kubernetes, a log per pod) or ``pdsh``: DeepSpeed's launcher starts
``deepspeed.launcher.launch`` on every node over pdsh, and pdsh gathers every node's output into the
job's one output file, each line prefixed with the host it came from (``dgx-b200-0403: ...``) and with
no rank label; such a site's attempt records carry no rank map either.
"""

from __future__ import annotations

import random
import string
from dataclasses import dataclass, replace


@dataclass(frozen=True)
class Site:
    scheduler: str  # slurm | kueue
    timezone: str  # the zone system logs and the workload print local times in
    system_log: str  # syslog | messages | journal | dmesg (kernel uptime) | dmesg-T | dmesg-H (relative)
    gpu_model: str
    gpu_pci: tuple[str, ...]  # the GPUs' PCI addresses, as NVRM prints them (domain:bus:device)
    driver: str
    kernel: str
    fabric: str  # ib | roce
    nics: tuple[tuple[str, str, str], ...]  # (PCI function, RDMA device, netdev) per GPU rail
    partition: str
    checkpoint_root: str
    image: str
    launchers: tuple[str, ...]  # how its users launch jobs: srun | torchrun | pod | pdsh

    @property
    def system_stream(self) -> str:
        """The bundle's stream name (file stem) for this site's system log."""
        return "dmesg" if self.system_log.startswith("dmesg") else self.system_log


DGX_B200 = Site(
    scheduler="slurm",
    timezone="Europe/Paris",
    system_log="syslog",
    gpu_model="NVIDIA B200",
    gpu_pci=(
        "0000:1b:00",
        "0000:43:00",
        "0000:52:00",
        "0000:61:00",
        "0000:9d:00",
        "0000:c3:00",
        "0000:d1:00",
        "0000:df:00",
    ),
    driver="570.133.20",
    kernel="6.8.0-1021-nvidia",
    fabric="ib",
    nics=(
        ("0000:18:00.0", "mlx5_0", "ibp24s0"),
        ("0000:40:00.0", "mlx5_3", "ibp64s0"),
        ("0000:4f:00.0", "mlx5_4", "ibp79s0"),
        ("0000:5e:00.0", "mlx5_5", "ibp94s0"),
        ("0000:9a:00.0", "mlx5_6", "ibp154s0"),
        ("0000:c0:00.0", "mlx5_9", "ibp192s0"),
        ("0000:ce:00.0", "mlx5_10", "ibp206s0"),
        ("0000:dc:00.0", "mlx5_11", "ibp220s0"),
    ),
    partition="batch",
    checkpoint_root="/lustre/fs1/checkpoints",
    image="",
    launchers=("srun", "torchrun"),
)

GKE_A3_ULTRA = Site(
    scheduler="kueue",
    timezone="UTC",
    system_log="dmesg",
    gpu_model="NVIDIA H200",
    gpu_pci=(
        "0000:8f:00",
        "0000:90:00",
        "0000:96:00",
        "0000:97:00",
        "0000:c4:00",
        "0000:c5:00",
        "0000:cb:00",
        "0000:cc:00",
    ),
    driver="550.90.07",
    kernel="5.15.0-1067-gke",
    fabric="roce",
    nics=(
        ("0000:91:00.0", "mlx5_0", "eth1"),
        ("0000:92:00.0", "mlx5_1", "eth2"),
        ("0000:98:00.0", "mlx5_2", "eth3"),
        ("0000:99:00.0", "mlx5_3", "eth4"),
        ("0000:c6:00.0", "mlx5_4", "eth5"),
        ("0000:c7:00.0", "mlx5_5", "eth6"),
        ("0000:cd:00.0", "mlx5_6", "eth7"),
        ("0000:ce:00.0", "mlx5_7", "eth8"),
    ),
    partition="",
    checkpoint_root="/data/checkpoints",
    image="us-docker.pkg.dev/ml-platform/train/pytorch:24.12-py3",
    launchers=("pod",),
)

# A second DGX B200 site: its nodes' kernel logs are kept as `dmesg -H` prints them, and its users
# launch DeepSpeed over pdsh (one output file for every node, lines labelled by host only).
DGX_B200_PDSH = replace(
    DGX_B200,
    timezone="America/Chicago",
    system_log="dmesg-H",
    partition="gpu",
    checkpoint_root="/scratch/ckpt",
    launchers=("pdsh",),
)

SRUN_OR_TORCHRUN, PDSH = ("srun", "torchrun"), ("pdsh",)
SLURM_VARIANTS = (
    ("Europe/Paris", "syslog", SRUN_OR_TORCHRUN),
    ("America/Chicago", "journal", SRUN_OR_TORCHRUN),
    ("UTC", "dmesg", SRUN_OR_TORCHRUN),
    ("Asia/Tokyo", "messages", SRUN_OR_TORCHRUN),
    ("America/Los_Angeles", "dmesg-T", SRUN_OR_TORCHRUN),
    ("America/New_York", "dmesg-H", SRUN_OR_TORCHRUN),
    ("Europe/Berlin", "syslog", PDSH),
    ("America/Chicago", "dmesg-H", PDSH),
)
KUEUE_VARIANTS = (("UTC", "dmesg"), ("UTC", "dmesg-T"), ("UTC", "journal"), ("UTC", "dmesg-H"))


def site_for(scheduler: str, seed: int) -> Site:
    """The site a single bundle is written for: time zone, log collection and launcher vary with ``seed``."""
    rng = random.Random(f"site:{scheduler}:{seed}")
    if scheduler == "slurm":
        zone, form, launchers = rng.choice(SLURM_VARIANTS)
        return replace(DGX_B200, timezone=zone, system_log=form, launchers=launchers)
    zone, form = rng.choice(KUEUE_VARIANTS)
    return replace(GKE_A3_ULTRA, timezone=zone, system_log=form)


SLURM_NAMINGS = ("dgx-b200-{:04d}", "gpu-b200-{:03d}", "hgx{:03d}", "node{:04d}")


def slurm_nodes(seed: int, count: int) -> tuple[str, ...]:
    """``count`` consecutive node names of one Slurm naming scheme, varied by ``seed``."""
    rng = random.Random(f"slurm-nodes:{seed}")
    naming = rng.choice(SLURM_NAMINGS)
    first = rng.randrange(1, 480)
    return tuple(naming.format(first + i) for i in range(count))


def gke_nodes(seed: int, count: int, cluster: str = "ml") -> tuple[str, ...]:
    """``count`` node names of one GKE node pool: ``gke-<GKE cluster>-a3u-pool-<hash>-<suffix>``."""
    rng = random.Random(f"gke-nodes:{seed}")
    pool = "".join(rng.choice("0123456789abcdef") for _ in range(8))
    suffixes: list[str] = []
    while len(suffixes) < count:
        suffix = "".join(rng.choice(string.ascii_lowercase + string.digits) for _ in range(4))
        if suffix not in suffixes:
            suffixes.append(suffix)
    return tuple(f"gke-{cluster}-a3u-pool-{pool}-{suffix}" for suffix in suffixes)


def slurm_job_id(seed: int) -> str:
    return str(random.Random(f"slurm-job:{seed}").randrange(300_000, 9_900_000))


def kueue_job_id(seed: int, name: str) -> str:
    """A Kueue workload name: ``job-<job name>-<5 hex>``."""
    rng = random.Random(f"kueue-job:{seed}")
    suffix = "".join(rng.choice("0123456789abcdef") for _ in range(5))
    return f"job-{name}-{suffix}"
