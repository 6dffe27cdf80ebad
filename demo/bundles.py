"""The catalogue of failure kinds: each writes one realistic attempt bundle and knows its intended diagnosis.

``KINDS[name].write(directory, cluster=..., job_id=..., nodes=..., start=..., seed=...)`` writes the
bundle and returns a ``Written`` record with the diagnosis the default rule pack should give it:
outcome, domain, subdomain and the root cause's nodes (the candidates' nodes when ambiguous). The same
arguments give byte-identical files.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from demo.draft import BundleDraft
from demo.kinds import application, flight_recorder, hangs, hardware, network, scheduler, storage
from demo.sites import Site, gke_nodes, kueue_job_id, site_for, slurm_job_id, slurm_nodes

SLURM, KUEUE = ("slurm",), ("kueue",)
BOTH = ("slurm", "kueue")
EXAMPLE_EPOCH = datetime(2025, 5, 5, 6, 0, tzinfo=UTC)  # single example bundles start from here, never from a clock


@dataclass(frozen=True)
class Written:
    path: Path
    kind: str
    outcome: str
    domain: str | None
    subdomain: str | None
    nodes: tuple[str, ...]  # the root cause's nodes; the candidates' nodes when ambiguous

    def intended(self) -> dict:
        """The diagnosis this bundle should get, in the shape of ``verdict``."""
        return {
            "outcome": self.outcome,
            "domain": self.domain,
            "subdomain": self.subdomain,
            "nodes": sorted(self.nodes),
        }


def verdict(diagnosis: dict) -> dict:
    """What a diagnosis (docs/diagnosis.md) concludes: outcome, domain, subdomain and the nodes at fault
    (the root cause's, or every candidate's when ambiguous)."""
    if diagnosis["root_cause"] is not None:
        nodes = set(diagnosis["root_cause"]["nodes"])
    else:
        nodes = {node for candidate in diagnosis["candidates"] for node in candidate["nodes"]}
    return {
        "outcome": diagnosis["outcome"],
        "domain": diagnosis["domain"],
        "subdomain": diagnosis["subdomain"],
        "nodes": sorted(nodes),
    }


@dataclass(frozen=True)
class Kind:
    name: str
    title: str
    story: Callable[[BundleDraft], tuple[str, ...]]
    schedulers: tuple[str, ...]
    outcome: str
    domain: str | None = None
    subdomain: str | None = None
    min_nodes: int = 1

    def write(
        self,
        directory: Path,
        *,
        cluster: str,
        job_id: str,
        nodes: Sequence[str],
        start: datetime,
        seed: int,
        scheduler: str | None = None,
        site: Site | None = None,
        attempt: int = 0,
        culprit: str | None = None,
        name: str | None = None,
    ) -> Written:
        """Write one bundle of this kind into ``directory``. ``culprit`` pins the faulty node (else the seed
        picks it); ``site`` fixes the cluster's conventions (else the seed varies them)."""
        scheduler = scheduler or (site.scheduler if site else self.schedulers[0])
        if scheduler not in self.schedulers:
            raise ValueError(f"kind {self.name!r} runs on {', '.join(self.schedulers)}, not {scheduler}")
        if len(nodes) < self.min_nodes:
            raise ValueError(f"kind {self.name!r} needs at least {self.min_nodes} nodes")
        site = site or site_for(scheduler, seed)
        draft = BundleDraft(
            self.name,
            cluster=cluster,
            job_id=job_id,
            nodes=tuple(nodes),
            start=start,
            seed=seed,
            site=site,
            attempt=attempt,
            culprit=culprit,
            name=name,
        )
        nodes_at_fault = self.story(draft)
        draft.write(Path(directory))
        return Written(Path(directory), self.name, self.outcome, self.domain, self.subdomain, nodes_at_fault)


ATTRIBUTED = "attributed"
KINDS: dict[str, Kind] = {
    kind.name: kind
    for kind in (
        Kind(
            "gpu-fallen-off-bus",
            "GPU fell off the bus (AER, Xid 79)",
            hardware.gpu_fallen_off_bus,
            BOTH,
            ATTRIBUTED,
            "hardware",
            "gpu.bus",
        ),
        Kind(
            "gpu-ecc-dbe",
            "Uncorrectable ECC error (Xid 48 + 63)",
            hardware.gpu_ecc_dbe,
            BOTH,
            ATTRIBUTED,
            "hardware",
            "gpu.memory",
        ),
        Kind(
            "gpu-nvlink",
            "NVLink5 fatal Xid, Xid 45 teardown",
            hardware.gpu_nvlink,
            SLURM,
            ATTRIBUTED,
            "hardware",
            "gpu.nvlink",
        ),
        Kind(
            "ib-port-down",
            "InfiniBand port down, NCCL status 12 then 5",
            network.ib_port_down,
            SLURM,
            ATTRIBUTED,
            "network",
            "link.infiniband",
        ),
        Kind("roce-link-down", "RoCE link down", network.roce_link_down, KUEUE, ATTRIBUTED, "network", "link.roce"),
        Kind(
            "host-oom",
            "Host OOM killer (Slurm OUT_OF_MEMORY)",
            application.host_oom,
            SLURM,
            ATTRIBUTED,
            "application",
            "host_oom",
        ),
        Kind(
            "k8s-oomkilled",
            "Pod OOMKilled (container memory limit)",
            application.k8s_oom_killed,
            KUEUE,
            ATTRIBUTED,
            "application",
            "host_oom",
        ),
        Kind(
            "cuda-oom",
            "CUDA out of memory on one rank",
            application.cuda_oom,
            BOTH,
            ATTRIBUTED,
            "application",
            "cuda_oom",
        ),
        Kind(
            "python-exception",
            "KeyError on one rank, the others time out",
            application.python_exception,
            BOTH,
            ATTRIBUTED,
            "application",
            "exception",
        ),
        Kind(
            "nan-loss", "Loss is NaN, training stops", application.nan_loss, BOTH, ATTRIBUTED, "application", "numerics"
        ),
        Kind(
            "import-error",
            "ModuleNotFoundError on every rank",
            application.import_error,
            BOTH,
            ATTRIBUTED,
            "application",
            "config",
        ),
        Kind(
            "lustre-outage",
            "Lustre servers unreachable from every node",
            storage.lustre_outage,
            SLURM,
            ATTRIBUTED,
            "storage",
            "filesystem",
        ),
        Kind(
            "disk-full",
            "No space left on device while checkpointing",
            storage.disk_full,
            BOTH,
            ATTRIBUTED,
            "storage",
            "capacity",
        ),
        Kind(
            "training-completed",
            "A run that worked (COMPLETED), before an NCCL upgrade",
            scheduler.training_completed,
            SLURM,
            "unattributed",
        ),
        Kind(
            "slurm-time-limit",
            "Slurm time limit",
            scheduler.slurm_time_limit,
            SLURM,
            ATTRIBUTED,
            "scheduler",
            "time_limit",
        ),
        Kind(
            "slurm-preemption",
            "Preempted by a higher-priority job",
            scheduler.slurm_preemption,
            SLURM,
            ATTRIBUTED,
            "scheduler",
            "preemption",
        ),
        Kind(
            "user-cancelled",
            "Cancelled by its user",
            scheduler.user_cancelled,
            SLURM,
            ATTRIBUTED,
            "scheduler",
            "cancelled",
        ),
        Kind(
            "node-lost",
            "A node stopped responding (NODE_FAIL)",
            scheduler.node_lost,
            SLURM,
            ATTRIBUTED,
            "infrastructure",
            "node_lost",
            min_nodes=2,
        ),
        Kind(
            "kueue-pods-ready-timeout",
            "Kueue PodsReady timeout eviction",
            scheduler.kueue_pods_ready_timeout,
            KUEUE,
            ATTRIBUTED,
            "scheduler",
            "eviction",
        ),
        Kind(
            "kueue-preemption",
            "Preempted by Kueue",
            scheduler.kueue_preemption,
            KUEUE,
            ATTRIBUTED,
            "scheduler",
            "preemption",
        ),
        Kind(
            "nccl-timeouts-only",
            "NCCL watchdog timeouts and nothing else",
            hangs.nccl_timeouts_only,
            BOTH,
            "unattributed",
        ),
        Kind(
            "collective-hang",
            "A collective hangs until the time limit (watchdog reports, no abort)",
            hangs.collective_hang,
            SLURM,
            ATTRIBUTED,
            "software",
            "nccl",
        ),
        Kind(
            "hang-after-completion",
            "Training completes, one rank hangs at exit until cancelled",
            hangs.hang_after_completion,
            SLURM,
            ATTRIBUTED,
            "software",
            "framework",
        ),
        Kind(
            "nccl-hang-flight-recorder",
            "A rank never enters a collective; the Flight Recorder dumps name it",
            flight_recorder.rank_never_entered,
            BOTH,
            ATTRIBUTED,
            "software",
            "nccl.straggler",
        ),
        Kind(
            "two-hardware-faults",
            "Two GPU faults on two nodes within a second",
            hardware.two_hardware_faults,
            SLURM,
            "ambiguous",
            "hardware",
            "ambiguous",
            min_nodes=2,
        ),
        Kind(
            "nvswitch-fatal",
            "NVSwitch fatal SXid, Fabric Manager report",
            hardware.nvswitch_fatal,
            SLURM,
            ATTRIBUTED,
            "hardware",
            "nvswitch",
        ),
        Kind(
            "gpu-thermal-slowdown",
            "GPU overheats and throttles (no rule in the default pack)",
            hardware.gpu_thermal_slowdown,
            SLURM,
            "unattributed",
        ),
    )
}


def example(kind: str, seed: int, directory: Path, *, nodes: int = 4) -> Written:
    """One bundle of ``kind`` with everything else derived from ``seed``: cluster, nodes, job id, start."""
    spec = KINDS[kind]
    scheduler = spec.schedulers[(seed - 1) % len(spec.schedulers)]
    start = EXAMPLE_EPOCH + timedelta(days=seed % 97, minutes=(seed * 7919) % 1440)
    if scheduler == "slurm":
        return spec.write(
            directory,
            cluster="dgx-a",
            job_id=slurm_job_id(seed),
            nodes=slurm_nodes(seed, nodes),
            start=start,
            seed=seed,
        )
    name = "llama3-8b-dpo"
    return spec.write(
        directory,
        cluster="gke-ml",
        job_id=kueue_job_id(seed, name),
        nodes=gke_nodes(seed, nodes),
        start=start,
        seed=seed,
        name=name,
        scheduler="kueue",
    )
