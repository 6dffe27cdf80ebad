"""A bundle being written: the attempt, its nodes' system logs, the training run, events and metrics.

A failure kind (``demo.kinds``) tells the story of one attempt through a ``BundleDraft``: the job
starts, trains, something happens on some node at some moment, the job ends. The draft adds what
every real attempt has around that story (background noise in every system log, the scheduler's
events, GPU metrics) and writes the bundle in the layout of docs/bundles.md.
"""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

from demo import metrics, noise, slurm, timestamps
from demo.sites import Site
from demo.systemlog import SystemLog
from demo.training import Rank, Training

JOB_NAMES = (
    "llama3-70b-pretrain",
    "mixtral-8x22b-sft",
    "gpt-13b-ft",
    "vit-h14-clip",
    "t5-xxl-distill",
    "dit-xl-video",
    "llama3-8b-dpo",
    "qwen2-72b-cpt",
    "bert-large-mlm",
)
USERS = (("jdoe", 1005), ("mgarcia", 1012), ("kchen", 1021), ("asingh", 1033), ("llm-svc", 2001))
NAMESPACE = "ml-train"
CLUSTER_QUEUE = "a3u-cluster-queue"
GPU_MEMORY_GIB = {"NVIDIA B200": 178.35, "NVIDIA H200": 139.81}


class BundleDraft:
    def __init__(
        self,
        kind: str,
        *,
        cluster: str,
        job_id: str,
        nodes: tuple[str, ...],
        start: datetime,
        seed: int,
        site: Site,
        attempt: int = 0,
        culprit: str | None = None,
        name: str | None = None,
    ):
        if not nodes:
            raise ValueError("an attempt needs at least one node")
        if culprit is not None and culprit not in nodes:
            raise ValueError(f"culprit {culprit!r} is not one of the attempt's nodes")
        if start.tzinfo is None:
            raise ValueError("start must be an aware datetime")
        self.rng = rng = random.Random(f"{kind}|{cluster}|{job_id}|{attempt}|{seed}")
        self.cluster = cluster
        self.job_id = job_id
        self.attempt = attempt
        self.nodes = tuple(nodes)
        self.start = start.astimezone(UTC).replace(microsecond=0)
        self.site = site
        self.zone = ZoneInfo(site.timezone)
        self.culprit = culprit or rng.choice(self.nodes)
        self.user, self.uid = rng.choice(USERS)
        self.name = name or rng.choice(JOB_NAMES)
        launcher = rng.choice(site.launchers) if len(site.launchers) > 1 else site.launchers[0]
        self.training = Training(
            rng=rng, site=site, zone=self.zone, nodes=self.nodes, name=self.name, launcher=launcher
        )
        self.logs: dict[str, SystemLog] = {}
        self.uuids: dict[tuple[str, int], str] = {}
        for node in self.nodes:
            boot = self.start - timedelta(days=rng.uniform(1.5, 70), seconds=rng.uniform(0, 3600))
            self.logs[node] = SystemLog(
                node, site.system_log, self.zone, boot, site.kernel, site.driver, site.nics[0][0]
            )
            for local in range(len(site.gpu_pci)):
                self.uuids[node, local] = f"GPU-{self.uuid()}"
        self.bad_dimms = {node for node in self.nodes if rng.random() < 0.2}
        self.events: dict[str, list[dict]] = {}
        self.needed: set[str] = set()  # event and metric files the story needs, written whatever the dice say
        self.xids: dict[tuple[str, int], list[tuple[datetime, int]]] = {}
        self.counters: dict[str, tuple[str, dict[tuple[str, int], datetime]]] = {}
        self.overheating: dict[tuple[str, int], datetime] = {}  # (node, gpu) -> when its temperature starts to climb
        self.with_metrics = rng.random() < 0.6
        self.with_slurm_events = rng.random() < 0.6
        self.state = self.exit_code = self.reason = ""
        self.end: datetime | None = None
        self.traces: dict[str, bytes] = {}  # Flight Recorder dumps by file name (traces/flight_recorder/)

    # -- what the story records --

    def kernel(self, node: str, moment: datetime, text: str) -> None:
        self.logs[node].kernel(moment, text)

    def daemon(self, node: str, moment: datetime, ident: str, text: str) -> None:
        self.logs[node].daemon(moment, ident, text)

    def xid(self, node: str, local: int, moment: datetime, code: int, detail: str) -> None:
        """An NVRM Xid line on the GPU ``local`` of ``node``; DCGM's Xid gauge takes the code."""
        self.kernel(node, moment, f"NVRM: Xid (PCI:{self.site.gpu_pci[local]}): {code}, {detail}")
        self.xids.setdefault((node, local), []).append((moment, code))

    def counter(self, file: str, name: str, bumps: dict[tuple[str, int], datetime]) -> None:
        """A counter on every GPU (``DCGM_*``, dcgm-exporter) or InfiniBand rail (node_exporter) of the
        attempt, rising by one on ``(node, index)`` at the moment given; written as ``metrics/<file>.json``."""
        self.counters[file] = (name, bumps)

    def event(
        self,
        file: str,
        moment: datetime,
        node: str | None,
        source: str,
        reason: str,
        message: str,
        *,
        needed: bool = False,
    ) -> None:
        self.events.setdefault(file, []).append(
            {"time": timestamps.rfc3339(moment), "node": node, "source": source, "reason": reason, "message": message}
        )
        if needed:
            self.needed.add(f"events/{file}")

    def after(self, moment: datetime, low: float, high: float) -> datetime:
        """A moment ``low`` to ``high`` seconds after ``moment``."""
        return moment + timedelta(seconds=self.rng.uniform(low, high))

    @property
    def slurm(self) -> bool:
        return self.site.scheduler == "slurm"

    @property
    def output_file(self) -> str | None:
        return f"logs/slurm-{self.job_id}.out" if self.slurm else None

    # -- the common parts of every story --

    def begin(self) -> datetime:
        """The job starts on its nodes; returns when training begins."""
        training = self.training
        if self.slurm:
            head = self.nodes[0]
            training.step(
                self.start, f"MASTER_ADDR={head} MASTER_PORT=29500 WORLD_SIZE={training.world} NNODES={len(self.nodes)}"
            )
            for node in self.nodes:
                if training.launcher == "pdsh":
                    self.pdsh_session(node)
                    continue
                noise.slurmd_launch(
                    self.logs[node],
                    self.rng,
                    self.after(self.start, 0.2, 1.5),
                    self.job_id,
                    self.uid,
                    training.ips[head],
                    batch=node == head,
                )
        else:
            self.admit()
        return training.launch(self.after(self.start, 4, 12))

    def pdsh_session(self, node: str) -> None:
        """The batch script starts on the first node; pdsh then logs in to every node over ssh."""
        log = self.logs[node]
        head = self.nodes[0]
        if node == head:
            log.daemon(
                self.after(self.start, 0.2, 1.5),
                f"slurmd[{self.rng.randrange(2800, 4200)}]",
                f"slurmd: Launching batch job {self.job_id} for UID {self.uid}",
            )
        noise.ssh_login(log, self.rng, self.after(self.start, 5, 9), self.user, self.uid, self.training.ips[head])

    def admit(self) -> None:
        """Kueue admits the workload and its pods start on the attempt's nodes."""
        queued = self.rng.randrange(3, 400)
        self.event(
            "kueue.json",
            self.start,
            None,
            "kueue-admission",
            "QuotaReserved",
            f"Quota reserved in ClusterQueue {CLUSTER_QUEUE}, wait time since queued was {queued}s",
        )
        self.event(
            "kueue.json",
            self.start,
            None,
            "kueue-admission",
            "Admitted",
            f"Admitted by ClusterQueue {CLUSTER_QUEUE}, wait time since reservation was 0s",
        )
        for node in self.nodes:
            self.pod_starts(node, self.after(self.start, 1, 3))

    def pod_starts(self, node: str, scheduled: datetime) -> None:
        pod = self.training.pods[node]
        self.event(
            "kubernetes.json",
            scheduled,
            node,
            "default-scheduler",
            "Scheduled",
            f"Successfully assigned {NAMESPACE}/{pod} to {node}",
        )
        pulled = self.after(scheduled, 0.5, 2)
        self.event(
            "kubernetes.json",
            pulled,
            node,
            "kubelet",
            "Pulled",
            f'Container image "{self.site.image}" already present on machine',
        )
        self.event("kubernetes.json", pulled, node, "kubelet", "Created", "Created container pytorch")
        started = self.after(pulled, 0.3, 1.2)
        self.event("kubernetes.json", started, node, "kubelet", "Started", "Started container pytorch")
        noise.pod_network(self.logs[node], self.rng, scheduled)

    def cascade(self, fault: datetime, spare: tuple = ()) -> None:
        """Every rank still waiting in the collective that never completes times out 600 s after ``fault``
        (``spare``: ranks whose story is told otherwise)."""
        seq, op, numel = self.training.collective()
        timeout = fault + timedelta(seconds=600)
        for rank in self.training.ranks:
            moment = timeout + timedelta(milliseconds=self.rng.randrange(0, 400))
            if self.training.is_alive(rank, moment) and not rank.stuck and rank not in spare:
                self.training.watchdog_timeout(rank, moment, seq, op, numel)

    def slurm_cancels(self, moment: datetime, banner: str, *, wait: int = 32, step: bool = True) -> None:
        """slurmstepd cancels the job (and its step): its banner in the output, srun waits, then the tasks die."""
        self.training.signal(moment)
        local = timestamps.slurm(moment, self.zone)
        head = next(n for n in self.nodes if not any(r.lost for r in self.training.on(n)))
        suffix = f" {banner}" if banner else ""
        stepd = "slurmstepd: error: ***"
        self.training.step(moment, f"{stepd} JOB {self.job_id} ON {head} CANCELLED AT {local}{suffix} ***")
        if self.training.launcher == "pdsh":  # no srun, no job step: the batch script ran pdsh
            return
        if step:
            self.training.step(moment, f"{stepd} STEP {self.job_id}.0 ON {head} CANCELLED AT {local}{suffix} ***")
        aborted = f"srun: Job step aborted: Waiting up to {wait} seconds for job step to finish."
        self.training.step(self.after(moment, 0.01, 0.2), aborted)

    def fault_after(self, begin: datetime, low_minutes: float, high_minutes: float) -> datetime:
        """When the failure strikes: some minutes into training."""
        return self.after(begin, low_minutes * 60, high_minutes * 60)

    def trains_for(self, low_minutes: float, high_minutes: float) -> datetime:
        """The job starts and trains well for ``low`` to ``high`` minutes; returns the moment that ends it."""
        begin = self.begin()
        moment = self.fault_after(begin, low_minutes, high_minutes)
        self.training.train(begin, moment)
        return moment

    def slurm_stops(self, moment: datetime, state: str, banner: str, event: tuple[str, str], reason: str = "") -> None:
        """Slurm stops the job (time limit, preemption, cancellation): slurmctld's ``(reason, message)`` event,
        slurmstepd's banner, SIGTERM to the tasks, the end."""
        self.event("slurmctld.json", moment, None, "slurmctld", *event)
        self.slurm_cancels(moment, banner)
        completion = [f"_job_complete: JobId={self.job_id} WTERMSIG 15"]
        self.finish(state, exit_code="0:15", reason=reason, completion=completion)

    def uuid(self) -> str:
        """A random UUID's text, drawn from the draft's own random generator."""
        return "-".join("".join(self.rng.choice("0123456789abcdef") for _ in range(n)) for n in (8, 4, 4, 4, 12))

    def rank(self, node: str, local: int) -> Rank:
        return next(r for r in self.training.on(node) if r.local == local)

    def failed(self) -> None:
        """The usual end of a job whose processes failed: Slurm FAILED, or a Job past its backoff limit."""
        if self.slurm:
            self.finish("FAILED", exit_code="1:0")
        else:
            self.finish("Failed", exit_code="1", reason="BackoffLimitExceeded")

    # -- the end --

    def finish(self, state: str, *, exit_code: str = "", reason: str = "", completion: list[str] | None = None) -> None:
        """The attempt is over: work out the teardown, its end, and the scheduler's closing events."""
        self.training.settle()
        last = max([self.training.last_line()] + [r.ended for r in self.training.ranks if r.ended is not None])
        end = self.after(last, 0.5, 3).replace(microsecond=0) + timedelta(seconds=1)
        self.state, self.exit_code, self.reason, self.end = state, exit_code, reason, end
        if self.slurm:
            if self.with_slurm_events or "events/slurmctld.json" in self.needed:
                hostlist = slurm.hostlist(self.nodes)
                cpus = 224 * len(self.nodes)
                self.events.setdefault("slurmctld.json", []).insert(
                    0,
                    {
                        "time": timestamps.rfc3339(self.start),
                        "node": None,
                        "source": "slurmctld",
                        "reason": "Allocate",
                        "message": f"sched: Allocate JobId={self.job_id} NodeList={hostlist} #CPUs={cpus} "
                        f"Partition={self.site.partition}",
                    },
                )
                for message in completion or [f"_job_complete: JobId={self.job_id} WEXITSTATUS 1"]:
                    self.event("slurmctld.json", end, None, "slurmctld", "JobComplete", message)
                self.event(
                    "slurmctld.json", end, None, "slurmctld", "JobComplete", f"_job_complete: JobId={self.job_id} done"
                )
            return
        if self.training.job_failed is not None:
            self.event(
                "kubernetes.json",
                self.training.job_failed,
                None,
                "job-controller",
                "BackoffLimitExceeded",
                "Job has reached the specified backoff limit",
            )
        for moment, node in self.training.pod_kills:
            self.event("kubernetes.json", moment, node, "kubelet", "Killing", "Stopping container pytorch")

    def write(self, directory: Path) -> Path:
        if self.end is None:
            raise RuntimeError("finish() the draft before writing it")
        directory.mkdir(parents=True, exist_ok=True)
        files = self.training.files(self.output_file)
        begin = self.start - timedelta(minutes=self.rng.uniform(20, 50))
        until = self.end + timedelta(minutes=self.rng.uniform(2, 8))
        for node, log in self.logs.items():
            noise.system_background(
                log, random.Random(f"{self.rng.random()}"), begin, until, bad_dimm=node in self.bad_dimms
            )
            files[f"logs/{node}/{self.site.system_stream}.log"] = log.render()
        for name, entries in self.events.items():
            if not self.slurm or self.with_slurm_events or f"events/{name}" in self.needed:
                ordered = sorted(entries, key=lambda e: e["time"])
                files[f"events/{name}"] = json.dumps(ordered, indent=1).encode() + b"\n"
        if self.with_metrics or any(n.startswith("metrics/") for n in self.needed):
            files.update(self._metrics())
        files["attempt.json"] = json.dumps(self.record(), indent=2).encode() + b"\n"
        files.update({f"traces/flight_recorder/{name}": data for name, data in self.traces.items()})
        for relative, content in sorted(files.items()):
            path = directory / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(content)
        return directory

    def record(self) -> dict:
        record = {
            "cluster": self.cluster,
            "scheduler": self.site.scheduler,
            "job_id": self.job_id,
            "attempt": self.attempt,
            "name": self.name,
            "user": self.user,
            "nodes": list(self.nodes),
            "start": timestamps.rfc3339(self.start),
            "end": timestamps.rfc3339(self.end),
            "state": self.state,
        }
        if self.exit_code:
            record["exit_code"] = self.exit_code
        if self.reason:
            record["reason"] = self.reason
        if self.training.launcher != "pdsh":  # pdsh labels lines with hosts only: no rank map
            record["tasks_per_node"] = self.training.gpus_per_node
        elif self.traces:  # but dumps gathered from a folder per node place each rank (docs/connectors.md)
            record["ranks"] = {str(rank.number): rank.node for rank in self.training.ranks}
        record["timezone"] = self.site.timezone
        return record

    def _temperature(self, node: str, local: int):
        """A GPU's temperature over time: idle, busy while the job runs, climbing past 90 C once it overheats."""
        idle, busy = self.rng.uniform(30, 38), self.rng.uniform(58, 78)
        running = (self.start.timestamp() + 90, self.end.timestamp())
        hot = self.overheating.get((node, local))
        rng = random.Random(f"{self.rng.random()}")

        def at(t: int) -> int:
            if hot is not None and running[0] <= t <= running[1] and t >= hot.timestamp():
                return min(97, round(busy + (t - hot.timestamp()) / 20)) + rng.choice((-1, 0, 1))
            return round(busy if running[0] <= t <= running[1] else idle) + rng.choice((-1, 0, 0, 1))

        return at

    def _gpu_labels(self, name: str, node: str, local: int) -> dict[str, str]:
        site = self.site
        ip = self.training.ips[node]
        return metrics.dcgm_labels(name, node, ip, local, self.uuids[node, local], site.gpu_model, site.driver)

    def _metrics(self) -> dict[str, bytes]:
        times = metrics.sample_times(self.start - timedelta(minutes=10), self.end + timedelta(minutes=2), 60)
        xid_series, temperature = [], []
        for node in self.nodes:
            for local in range(len(self.site.gpu_pci)):
                history = sorted(self.xids.get((node, local), []))

                def xid_at(t: int, history=history) -> float:
                    return next((code for moment, code in reversed(history) if moment.timestamp() <= t), 0)

                xid_series.append(
                    metrics.series(self._gpu_labels("DCGM_FI_DEV_XID_ERRORS", node, local), times, xid_at)
                )
                temperature.append(
                    metrics.series(
                        self._gpu_labels("DCGM_FI_DEV_GPU_TEMP", node, local), times, self._temperature(node, local)
                    )
                )
        out = {
            "metrics/dcgm_xid_errors.json": metrics.query_range(xid_series),
            "metrics/dcgm_gpu_temp.json": metrics.query_range(temperature),
        }
        for file, (name, bumps) in self.counters.items():
            result = []
            for node in self.nodes:
                for index in range(len(self.site.gpu_pci)):
                    if name.startswith("DCGM_"):
                        labels = self._gpu_labels(name, node, index)
                    else:
                        labels = metrics.node_exporter_labels(name, node, device=self.site.nics[index][1], port="1")
                    bump = bumps.get((node, index))
                    result.append(
                        metrics.series(labels, times, lambda t, bump=bump: int(bool(bump) and t >= bump.timestamp()))
                    )
            out[f"metrics/{file}.json"] = metrics.query_range(result)
        return out
