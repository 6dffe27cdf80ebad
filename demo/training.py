"""A distributed PyTorch training run: its ranks, what they print, and the launcher around them.

Four launchers, as clusters run them:

- ``srun``: one Slurm task per GPU; all ranks write to ``logs/slurm-<job>.out`` with srun's
  ``--label`` prefix (``3: ``). Slurm does not kill the other tasks when one fails (KillOnBadExit=0),
  so the healthy ranks wait in their collective until the NCCL watchdog ends them.
- ``torchrun``: one Slurm task per node running torchrun; each node's agent and workers write
  ``logs/<node>/torchrun.log`` (workers with ``[default3]:``), srun's own lines go to the job's
  ``.out``. When a worker dies its agent stops the node's other workers (SIGTERM, then SIGKILL 30 s
  later) and reports the failure; the other nodes know nothing until their watchdog fires.
- ``pod``: Kubernetes pods running torchrun, one per node, each pod's log in
  ``logs/<node>/<pod>.log``. A failed pod fails the Job, and the Job's other pods are killed.
- ``pdsh``: DeepSpeed's runner (in the Slurm batch script) starts ``deepspeed.launcher.launch`` on
  every node over pdsh (DeepSpeed 0.16, deepspeed/launcher/runner.py, multinode_runner.py, launch.py).
  pdsh writes every node's output to the job's ``.out`` file, each line prefixed ``<host>: `` (pdsh
  src/pdsh/dsh.c) and with no rank label. Each node's launcher, like torchrun's agent, stops its
  node's workers when one fails and exits with that worker's code, which pdsh reports
  (``pdsh@<head>: <host>: ssh exited with exit code 250``); the other nodes run on.

Every line is recorded with its true moment and rendered in time order; lines that carry no
timestamp of their own (tracebacks, NCCL's INFO lines) are still placed where they were printed.
"""

from __future__ import annotations

import base64
import json
import random
from dataclasses import dataclass
from datetime import datetime, timedelta, tzinfo

from demo import pytorch, timestamps
from demo.sites import Site
from demo.slurm import task_list

NCCL_VERSION = "2.23.4"
PYTHON = "/usr/bin/python3"
DS_CONFIG = ("--deepspeed", "--deepspeed_config", "ds_config.json")
SIGNALS = {-6: "Aborted", -9: "Killed", -15: "Terminated"}
COLLECTIVES = (
    ("ALLREDUCE", 2106881),
    ("_ALLGATHER_BASE", 66846720),
    ("_REDUCE_SCATTER_BASE", 33423360),
    ("ALLREDUCE", 1),
)


@dataclass
class Rank:
    number: int
    node: str
    local: int
    pid: int
    ended: datetime | None = None
    code: int | None = None  # exit code; negative: killed by that signal
    stuck: bool = False  # in uninterruptible sleep: SIGTERM does not end it
    lost: bool = False  # gone without a word: its node died, or its container was killed whole
    oom: bool = False  # the kernel's OOM killer ended it


class Training:
    def __init__(
        self,
        *,
        rng: random.Random,
        site: Site,
        zone: tzinfo,
        nodes: tuple[str, ...],
        name: str,
        launcher: str,
        gpus_per_node: int = 8,
    ):
        self.rng = rng
        self.site = site
        self.zone = zone
        self.nodes = nodes
        self.name = name
        self.launcher = launcher
        # how the training loop reports its progress: Megatron-LM's iteration lines, DeepSpeed's step lines or a
        # custom script's Python logging
        self.style = rng.choice(("megatron", "deepspeed") if launcher == "pdsh" else ("megatron", "logging"))
        self.script = rng.choice(("pretrain_gpt.py", "train.py", "scripts/train_llm.py"))
        self.python = "python3.10"
        self.nccl_version = NCCL_VERSION  # an older one for a run before the site upgraded NCCL
        self.ranks: list[Rank] = []
        self.agents: dict[str, int] = {}
        self.pods: dict[str, str] = {}
        self.ips: dict[str, str] = {}
        subnet = rng.randrange(16, 250)
        for index, node in enumerate(nodes):
            base = rng.randrange(40_000, 3_900_000)
            self.agents[node] = base
            self.ips[node] = f"10.{subnet}.{index // 200}.{11 + index % 200}"
            suffix = "".join(rng.choice("abcdefghijklmnopqrstuvwxyz0123456789") for _ in range(5))
            self.pods[node] = f"{name}-workers-0-{index}-{suffix}"
            for local in range(gpus_per_node):
                self.ranks.append(Rank(index * gpus_per_node + local, node, local, base + 11 + local * 4))
        self.gpus_per_node = gpus_per_node
        self.lines: list[tuple[datetime, int, str, object, str]] = []  # (moment, order, channel, key, text)
        self.iteration = rng.randrange(200, 90_000)
        self.train_iters = max(self.iteration * 2, 100_000) // 1000 * 1000
        self.seconds_per_iteration = rng.uniform(1.2, 9.0)
        # iterations between two log lines: a line every 15 s or more, as long runs are configured
        self.log_interval = next(n for n in (1, 2, 5, 10, 20, 50, 100) if n * self.seconds_per_iteration >= 15)
        self.checkpoint_every = rng.choice((20, 30, 45, 60))  # minutes
        self.seq = self.iteration * rng.choice((6, 8, 12)) + rng.randrange(0, 6)
        self.loss = rng.uniform(1.7, 2.6)
        self.last_progress: datetime | None = None
        self.stopped_at: datetime | None = None  # when the scheduler signalled the job
        self.job_failed: datetime | None = None  # Kubernetes: when the Job controller failed the Job
        self.pod_kills: list[tuple[datetime, str]] = []  # Kubernetes: (when, node) the Job's pods were killed
        self.exits: list[tuple[datetime, str, str]] = []  # (when, node, how) each torchrun agent exited
        self.container_deaths: list[tuple[datetime, str]] = []  # Kubernetes: (when, node) a pod's container died
        self.settled = False
        self.launched = False  # the workers exist (the rendezvous completed)
        self.environment = {"NCCL_DEBUG": "INFO"}  # the job's NCCL settings (DeepSpeed's launcher lists them)

    # -- who is where --

    @property
    def world(self) -> int:
        return len(self.ranks)

    def on(self, node: str) -> list[Rank]:
        return [r for r in self.ranks if r.node == node]

    @property
    def logging_rank(self) -> Rank:
        return self.ranks[-1] if self.style == "megatron" else self.ranks[0]

    # -- output channels --

    def _add(self, moment: datetime, channel: str, key: object, text: str) -> None:
        self.lines.append((moment, len(self.lines), channel, key, text))

    def print(self, rank: Rank, moment: datetime, *texts: str) -> None:
        """Lines a rank writes to its stdout/stderr, printed together."""
        for text in texts:
            self._add(moment, "worker", rank.number, text)

    def c10(self, rank: Rank, moment: datetime, level: str, source: str, message: str) -> None:
        """A line of PyTorch's C++ logging, which prefixes the global rank."""
        stamp = timestamps.c10(level, moment, self.zone, self.rng.randrange(1000))
        self.print(rank, moment, f"[rank{rank.number}]:[{stamp} {source}] {message}")

    def agent(self, node: str, moment: datetime, level: str, source: str, message: str) -> None:
        """A line of the torchrun agent on ``node`` (glog format)."""
        stamp = timestamps.glog(level, moment, self.zone)
        self._add(moment, "agent", node, f"{stamp} {self.agents[node]} {source}] {message}")

    def agent_plain(self, node: str, moment: datetime, *texts: str) -> None:
        for text in texts:
            self._add(moment, "agent", node, text)

    def deepspeed(self, node: str | None, moment: datetime, level: str, source: str, message: str) -> None:
        """A line of DeepSpeed's logger: of the launcher on ``node``, or of the runner (``node`` None)."""
        text = f"[{timestamps.python_logging(moment, self.zone)}] [{level}] [{source}] {message}"
        if node is None:
            self.step(moment, text)
        else:
            self._add(moment, "agent", node, text)

    def step(self, moment: datetime, text: str) -> None:
        """A line of the batch script's own processes in the job's output file (srun, slurmstepd, DeepSpeed's
        runner, pdsh)."""
        self._add(moment, "step", None, text)

    def nccl(self, rank: Rank, moment: datetime, level: str, text: str, thread: int = 0, source: str = "") -> None:
        """A line of NCCL's debug output, ``host:pid:tid [dev] NCCL INFO ...``; WARN lines name their source and,
        since NCCL 2.23, carry a timestamp."""
        where = f"{source} " if source else ""
        stamp = f"[{timestamps.seconds(moment, self.zone)}] " if level == "WARN" else ""
        line = f"{stamp}{rank.node}:{rank.pid}:{rank.pid + thread} [{rank.local}] {where}NCCL {level} {text}"
        self.print(rank, moment, line)

    # -- the run --

    def agent_banner(self, node: str, moment: datetime) -> None:
        for text in pytorch.torchrun_banner():
            self.agent(node, moment, "W", "torch/distributed/run.py:793", text)

    def start_launchers(self, moment: datetime) -> None:
        """The per-node launchers start (torchrun's agents, DeepSpeed's launchers over pdsh)."""
        if self.launcher == "srun":
            return
        if self.launcher == "pdsh":
            self._pdsh_runner(moment)
            moment += timedelta(seconds=self.rng.uniform(1.0, 2.5))
        for node in self.nodes:
            at = moment + timedelta(seconds=self.rng.uniform(0.5, 3.0))
            if self.launcher == "pdsh":
                self._deepspeed_launch(node, at)
            else:
                self.agent_banner(node, at)

    @property
    def world_info(self) -> dict[str, list[int]]:
        """DeepSpeed's resource pool: each node's GPUs."""
        return {node: list(range(self.gpus_per_node)) for node in self.nodes}

    def worker_command(self, local: int) -> list[str]:
        """The command DeepSpeed's launcher starts for one local rank."""
        return [PYTHON, "-u", self.script, f"--local_rank={local}", *DS_CONFIG]

    def _pdsh_runner(self, moment: datetime) -> None:
        """The ``deepspeed`` runner in the batch script: its command line, which runs pdsh."""
        head = self.nodes[0]
        encoded = base64.urlsafe_b64encode(json.dumps(self.world_info).encode()).decode()
        workers = ",".join(self.nodes)
        exports = "".join(f"export {key}={value}; " for key, value in self.environment.items())
        self.deepspeed(
            None, moment, "INFO", "runner.py:496:main", f"Using IP address of {self.ips[head]} for node {head}"
        )
        self.deepspeed(
            None, moment, "INFO", "multinode_runner.py:81:get_cmd", f"Running on the following workers: {workers}"
        )
        self.deepspeed(
            None,
            moment,
            "INFO",
            "runner.py:607:main",
            f"cmd = pdsh -S -f 1024 -w {workers} export PYTHONPATH=/workspace; {exports}cd /workspace; {PYTHON} -u -m "
            f"deepspeed.launcher.launch --world_info={encoded} --node_rank=%n --master_addr={self.ips[head]} "
            f"--master_port=29500 {self.script} {' '.join(DS_CONFIG)}",
        )

    def _deepspeed_launch(self, node: str, moment: datetime) -> None:
        """``deepspeed.launcher.launch`` starting on ``node``: the world it reads, then one process per GPU."""
        index = self.nodes.index(node)
        for key, value in self.environment.items():
            self.deepspeed(node, moment, "INFO", "launch.py:139:main", f"{index} {key}={value}")
        mapping = {n: [r.number for r in self.on(n)] for n in self.nodes}
        for source, message in (
            ("launch.py:146:main", f"WORLD INFO DICT: {self.world_info}"),
            (
                "launch.py:152:main",
                f"nnodes={len(self.nodes)}, num_local_procs={self.gpus_per_node}, node_rank={index}",
            ),
            ("launch.py:163:main", f"global_rank_mapping=defaultdict(<class 'list'>, {mapping})"),
            ("launch.py:164:main", f"dist_world_size={self.world}"),
            ("launch.py:168:main", f"Setting CUDA_VISIBLE_DEVICES={','.join(map(str, range(self.gpus_per_node)))}"),
        ):
            self.deepspeed(node, moment, "INFO", source, message)
        for rank in self.on(node):
            self.deepspeed(
                node,
                moment + timedelta(milliseconds=5 * rank.local),
                "INFO",
                "launch.py:256:main",
                f"process {rank.pid} spawned with command: {self.worker_command(rank.local)}",
            )

    def launch(self, moment: datetime) -> datetime:
        """The launchers start, NCCL initialises on every rank; returns when training starts."""
        self.start_launchers(moment)
        self.launched = True
        init = moment + timedelta(seconds=self.rng.uniform(25, 70))
        comm_id = self.rng.getrandbits(64)
        rails = " ".join(
            f"[{i}]{nic[1]}:1/{'IB' if self.site.fabric == 'ib' else 'RoCE'}" for i, nic in enumerate(self.site.nics)
        )
        for rank in self.ranks:
            at = init + timedelta(seconds=self.rng.uniform(0, 4))
            oob = f"{self.site.nics[0][2] if self.site.fabric == 'ib' else 'eth0'}:{self.ips[rank.node]}<0>"
            if rank.number == 0:
                self.nccl(rank, at, "INFO", f"NCCL version {self.nccl_version}+cuda12.6")
            self.nccl(rank, at, "INFO", f"Bootstrap : Using {oob}")
            if rank.local == 0:
                self.nccl(
                    rank, at, "INFO", "NET/Plugin: Could not find: libnccl-net.so. Using internal network plugin."
                )
                self.nccl(rank, at, "INFO", f"NET/IB : Using {rails} ; OOB {oob}")
            comm = f"comm 0x{self.rng.getrandbits(44) | 0x550000000000:x}"
            bus = self.site.gpu_pci[rank.local].split(":")[1]
            device = f"cudaDev {rank.local} nvmlDev {rank.local} busId {bus}000"
            head = f"{comm} rank {rank.number} nranks {self.world} {device}"
            self.nccl(rank, at, "INFO", f"{head} commId 0x{comm_id:x} - Init START")
            self.nccl(
                rank,
                at,
                "INFO",
                f"{comm} rank {rank.number} nRanks {self.world} nNodes {len(self.nodes)} "
                f"localRanks {self.gpus_per_node} localRank {rank.local} MNNVL 0",
            )
            done = at + timedelta(seconds=self.rng.uniform(1.5, 6))
            self.nccl(
                rank, done, "INFO", f"{head} commId 0x{comm_id:x} - Init COMPLETE", thread=self.rng.randrange(1, 90)
            )
        return init + timedelta(seconds=self.rng.uniform(40, 120))

    def train(
        self, begin: datetime, until: datetime, *, nan_from: datetime | None = None, slow_from: datetime | None = None
    ) -> None:
        """Training from ``begin`` until ``until``: the logging rank's iteration lines, checkpoints. From
        ``nan_from`` the loss is NaN; from ``slow_from`` a straggling GPU makes every iteration slower."""
        rank = self.logging_rank
        moment = begin
        next_checkpoint = begin + timedelta(minutes=self.checkpoint_every)
        slowdown = 1.0
        while self.iteration < self.train_iters:
            if slow_from is not None and moment >= slow_from:
                slowdown = min(slowdown * self.rng.uniform(1.6, 2.4), 60.0)
            interval = timedelta(seconds=self.seconds_per_iteration * self.log_interval * slowdown)
            if moment + interval > until:
                break
            moment += interval * self.rng.uniform(0.97, 1.03)
            self.iteration += self.log_interval
            self.seq += self.log_interval * 8
            diverged = nan_from is not None and moment >= nan_from
            self.loss = max(0.9, self.loss - self.rng.uniform(-0.02, 0.021))
            self.print(rank, moment, self._iteration_line(moment, diverged, slowdown))
            self.last_progress = moment
            if moment >= next_checkpoint and not diverged:
                self._checkpoint(rank, moment)
                next_checkpoint = moment + timedelta(minutes=self.checkpoint_every)

    def _iteration_line(self, moment: datetime, diverged: bool, slowdown: float) -> str:
        elapsed = self.seconds_per_iteration * slowdown * 1000 * self.rng.uniform(0.98, 1.02)
        norm = "nan" if diverged else f"{self.rng.uniform(0.15, 1.4):.3f}"
        if self.style == "deepspeed":  # deepspeed/runtime/engine.py _report_progress, through log_dist
            lr = 3e-4 * (1 - self.iteration / self.train_iters)
            return (
                f"[{timestamps.python_logging(moment, self.zone)}] [INFO] [logging.py:128:log_dist] [Rank 0] "
                f"step={self.iteration}, skipped={int(diverged)}, lr=[{lr!r}], mom=[(0.9, 0.95)]"
            )
        if self.style == "megatron":
            loss = "nan" if diverged else f"{self.loss:.6E}"
            return (
                f" [{timestamps.seconds(moment, self.zone)}] iteration {self.iteration:>8}/{self.train_iters:>8} | "
                f"consumed samples: {self.iteration * 1024:>12} | elapsed time per iteration (ms): {elapsed:.1f} | "
                f"learning rate: {3e-4 * (1 - self.iteration / self.train_iters):.6E} | global batch size:  1024 | "
                f"lm loss: {loss} | loss scale: 1.0 | grad norm: {norm} | number of skipped iterations:   0 | "
                f"number of nan iterations:   {int(diverged)} |"
            )
        loss = "nan" if diverged else f"{self.loss:.4f}"
        return (
            f"{timestamps.python_logging(moment, self.zone)} - INFO - __main__ - step {self.iteration} | loss {loss} | "
            f"grad_norm {norm} | lr {3e-4 * (1 - self.iteration / self.train_iters):.3e} | "
            f"{int(1024 * 4096 / self.seconds_per_iteration / slowdown)} tok/s | "
            f"{self.seconds_per_iteration * slowdown:.2f} s/it"
        )

    def _checkpoint(self, rank: Rank, moment: datetime) -> None:
        path = f"{self.site.checkpoint_root}/{self.name}"
        if self.style == "deepspeed":  # deepspeed/runtime/checkpoint_engine/torch_checkpoint_engine.py
            tag = f"global_step{self.iteration}"
            stamp = timestamps.python_logging(moment, self.zone)
            self.print(
                rank,
                moment,
                f"[{stamp}] [INFO] [logging.py:128:log_dist] [Rank 0] [Torch] Checkpoint {tag} is about to be saved!",
            )
            done = moment + timedelta(seconds=self.rng.uniform(20, 70))
            stamp = timestamps.python_logging(done, self.zone)
            self.print(
                rank,
                done,
                f"[{stamp}] [INFO] [torch_checkpoint_engine.py:33:commit] [Torch] Checkpoint {tag} is ready now!",
            )
        elif self.style == "megatron":
            self.print(rank, moment, f"saving checkpoint at iteration {self.iteration:>8} to {path}")
            done = moment + timedelta(seconds=self.rng.uniform(20, 70))
            self.print(rank, done, f"  successfully saved checkpoint at iteration {self.iteration:>8} to {path}")
        else:
            self.print(
                rank,
                moment,
                f"{timestamps.python_logging(moment, self.zone)} - INFO - checkpoint - "
                f"saving step {self.iteration} to {path}/step_{self.iteration:08d}",
            )

    def completed(self, moment: datetime) -> None:
        """Megatron-LM's training loop is over (megatron/training/training.py, print_datetime on rank 0)."""
        stamp = f"{moment.astimezone(self.zone):%Y-%m-%d %H:%M:%S.%f}"
        self.print(self.ranks[0], moment, f"[after training is done] datetime: {stamp} ")

    def collective(self) -> tuple[int, str, int]:
        """The collective in flight when the job stops making progress: (SeqNum, OpType, numel)."""
        op, numel = self.rng.choice(COLLECTIVES)
        return self.seq + self.rng.randrange(1, 6), op, numel

    # -- how ranks end --

    def addresses(self) -> list[int]:
        base = 0x7F0000000000 | (self.rng.getrandbits(32) << 8)
        return [base + self.rng.randrange(0x10000, 0x900000) for _ in range(4)]

    def watchdog_report(self, rank: Rank, moment: datetime, seq: int, op: str, numel: int) -> str:
        """The NCCL watchdog reports a collective that timed out; returns its message. Without async error
        handling (TORCH_NCCL_ASYNC_ERROR_HANDLING=0) that is all: the rank stays blocked in the collective."""
        ran = 600_000 + self.rng.randrange(5, 120)
        caught = pytorch.watchdog_caught(rank.number, seq, op, numel, ran)
        pg = pytorch.PG.format(rank=rank.number)
        self.c10(rank, moment, "E", "ProcessGroupNCCL.cpp:632", caught)
        self.c10(
            rank,
            moment,
            "E",
            "ProcessGroupNCCL.cpp:2271",
            f"{pg}  failure detected by watchdog at work "
            f"sequence id: {seq} PG status: last enqueued work: {seq + 1}, last completed work: {seq - 1}",
        )
        self.c10(
            rank,
            moment,
            "E",
            "ProcessGroupNCCL.cpp:670",
            "Stack trace of the failed collective not found, "
            "potentially because FlightRecorder is disabled. You can enable it by setting "
            "TORCH_NCCL_TRACE_BUFFER_SIZE to a non-zero value.",
        )
        return caught

    def watchdog_timeout(self, rank: Rank, moment: datetime, seq: int, op: str, numel: int) -> None:
        """The NCCL watchdog gives up on a collective and takes the process down (SIGABRT)."""
        caught = self.watchdog_report(rank, moment, seq, op, numel)
        pg = pytorch.PG.format(rank=rank.number)
        later = moment + timedelta(seconds=self.rng.uniform(3.5, 4.5))
        self.c10(
            rank,
            later,
            "E",
            "ProcessGroupNCCL.cpp:684",
            f"[Rank {rank.number}] Some NCCL operations have failed "
            "or timed out. Due to the asynchronous nature of CUDA kernels, subsequent GPU operations might run "
            "on corrupted/incomplete data.",
        )
        self.c10(
            rank,
            later,
            "E",
            "ProcessGroupNCCL.cpp:698",
            f"[Rank {rank.number}] To avoid data inconsistency, we are taking the entire process down.",
        )
        self._abort(
            rank,
            later,
            f"{pg} Process group watchdog thread terminated with exception: {caught}",
            "checkTimeout",
            f"{pytorch.TORCH_SRC}/ProcessGroupNCCL.cpp:635",
            "c10d::ProcessGroupNCCL::WorkNCCL::checkTimeout(std::optional<std::chrono::"
            "duration<long, std::ratio<1l, 1000l> > >) + 0x282",
        )

    def cuda_failure(self, rank: Rank, moment: datetime, error: str) -> None:
        """The process group's watchdog thread hits a CUDA error on the rank's GPU and aborts the process."""
        pg = pytorch.PG.format(rank=rank.number)
        message = f"{pg} Process group watchdog thread terminated with exception: CUDA error: {error}"
        self.c10(rank, moment, "E", "ProcessGroupNCCL.cpp:1899", message)
        self.print(rank, moment, *pytorch.cuda_error_notes())
        self._abort(
            rank,
            moment,
            message,
            "c10_cuda_check_implementation",
            "/opt/pytorch/pytorch/c10/cuda/CUDAException.cpp:43",
            "c10d::ProcessGroupNCCL::WorkNCCL::finishedGPUExecutionInternal() const + 0x52",
        )

    def _abort(self, rank: Rank, moment: datetime, what: str, raised_from: str, source: str, entry: str) -> None:
        """The C++ exception ``what`` ends the process (SIGABRT), with its backtrace."""
        self.print(
            rank,
            moment,
            f"Exception raised from {raised_from} at {source} (most recent call first):",
            *pytorch.frames(self.addresses(), entry),
            "",
            "terminate called after throwing an instance of 'c10::DistBackendError'",
            f"  what():  {what}",
        )
        self.end(rank, moment + timedelta(milliseconds=self.rng.randrange(50, 400)), -6)

    def traceback(self, rank: Rank, moment: datetime, frames: list[str], last: str, *, prefixed: bool = True) -> None:
        """An uncaught Python exception ends the rank (exit code 1); PyTorch prefixes the rank once it knows it."""
        prefix = f"[rank{rank.number}]: " if prefixed else ""
        lines = ["Traceback (most recent call last):", *frames, last]
        self.print(rank, moment, *(f"{prefix}{line}" for line in lines))
        self.end(rank, moment + timedelta(milliseconds=self.rng.randrange(300, 1500)), 1)

    def end(self, rank: Rank, moment: datetime, code: int) -> None:
        """The rank's process ended (its agent's reaction is worked out by ``settle``)."""
        if rank.ended is None or moment < rank.ended:
            rank.ended, rank.code = moment, code

    def hang(self, rank: Rank) -> None:
        """The rank is stuck in the kernel (uninterruptible sleep): SIGTERM does not end it."""
        rank.stuck = True

    def lose_node(self, node: str, moment: datetime) -> None:
        """The node dies: its processes are gone without a word, and so is its agent."""
        for rank in self.on(node):
            if rank.ended is None or rank.ended > moment:
                rank.ended, rank.code, rank.lost = moment, None, True

    def signal(self, moment: datetime) -> None:
        """The scheduler sends SIGTERM to everything still running (time limit, preemption, cancel, eviction)."""
        self.stopped_at = moment

    def is_alive(self, rank: Rank, at: datetime) -> bool:
        """Whether the rank still runs at ``at``, counting the teardown its launcher will do."""
        if rank.ended is not None and rank.ended <= at:
            return False
        if self.stopped_at is not None and at >= self.stopped_at:
            return False
        if self.launcher == "srun":
            return True
        first = self._first_failure(rank.node)
        if first is not None and at >= first + timedelta(seconds=1):
            return False
        if self.launcher == "pod":
            failures = [f for f in map(self._first_failure, self.nodes) if f is not None]
            failures += [moment for moment, _ in self.container_deaths]
            if failures and at >= min(failures) + timedelta(seconds=40):
                return False
        return True

    def _first_failure(self, node: str) -> datetime | None:
        return min((r.ended for r in self.on(node) if r.ended is not None and r.code and not r.lost), default=None)

    # -- the launcher tears the job down --

    def kill_container(self, node: str, moment: datetime) -> None:
        """Kubernetes: the pod's container is killed whole (cgroup OOM with oom.group): agent and workers alike."""
        for rank in self.on(node):
            if rank.ended is None or rank.ended > moment:
                rank.ended, rank.code, rank.lost, rank.oom = moment, -9, True, True
        self.container_deaths.append((moment, node))

    def settle(self) -> None:
        """Work out the launcher's teardown, in time order, once every rank's own fate is known.

        torchrun, DeepSpeed's launcher: the first failure on a node makes its launcher stop the node's other
        workers and report. Kubernetes: the first failed pod fails the Job, whose other pods are then killed.
        The scheduler's signal stops whatever still runs. srun and pdsh report each node's or task's end.
        """
        if self.settled:
            return
        self.settled = True
        if self.launcher == "srun":
            self._srun_settle()
            self._srun_task_lines()
            return
        if self.launcher == "pdsh":
            for rank in self.ranks:
                if rank.code == 0:  # DeepSpeed's launcher polls its workers every second
                    at = rank.ended + timedelta(seconds=self.rng.uniform(0.05, 1.0))
                    self.deepspeed(
                        rank.node, at, "INFO", "launch.py:351:main", f"Process {rank.pid} exits successfully."
                    )
        done: set[str] = set()
        dead = {node for _, node in self.container_deaths}
        while True:
            options = [(self._first_failure(n), n) for n in self.nodes if n not in done and self._first_failure(n)]
            options += [(moment, node) for moment, node in self.container_deaths if node not in done]
            stop = self.stopped_at
            if not options and stop is None:
                break
            first, node = min(options) if options else (None, None)
            if stop is not None and (first is None or stop <= first):
                for other in self.nodes:
                    if other not in done:
                        done.add(other)
                        self._terminate(other, stop)
                break
            done.add(node)
            exited = first if node in dead else self._agent_reacts(node, first)
            if self.launcher == "pod" and self.job_failed is None:
                self._fail_job(exited, done)
        self._srun_task_lines()

    def _fail_job(self, exited: datetime, done: set[str]) -> None:
        """Kubernetes: a pod failed, so the Job failed (backoffLimit 0) and its running pods are killed."""
        self.job_failed = exited + timedelta(seconds=self.rng.uniform(0.5, 2.0))
        kill = self.job_failed + timedelta(seconds=self.rng.uniform(0.2, 1.0))
        for node in self.nodes:
            first = self._first_failure(node)
            if node not in done and (first is None or first >= kill):
                done.add(node)
                self.pod_kills.append((kill, node))
                self._terminate(node, kill)

    def _agent_reacts(self, node: str, first: datetime) -> datetime:
        """The node's agent saw a worker fail at ``first``: it stops the others and reports; returns its exit."""
        if self.launcher == "pdsh":
            return self._deepspeed_reacts(node, first)
        detected = first + timedelta(seconds=self.rng.uniform(0.2, 0.9))
        last = detected
        for rank in self.on(node):
            if rank.lost or (rank.ended is not None and rank.ended <= detected):
                continue
            self.agent(
                node,
                detected,
                "W",
                "torch/distributed/elastic/multiprocessing/api.py:897",
                f"Sending process {rank.pid} closing signal SIGTERM",
            )
            if rank.stuck:
                killed = detected + timedelta(seconds=30, milliseconds=self.rng.randrange(5, 60))
                self.agent(
                    node,
                    killed,
                    "W",
                    "torch/distributed/elastic/multiprocessing/api.py:916",
                    f"Unable to shutdown process {rank.pid} via Signals.SIGTERM, forcefully exiting via "
                    "Signals.SIGKILL",
                )
                rank.ended, rank.code = killed, -9
            else:
                rank.ended, rank.code = detected + timedelta(milliseconds=self.rng.randrange(80, 1500)), -15
            last = max(last, rank.ended)
        moment = last + timedelta(milliseconds=self.rng.randrange(40, 300))
        ranks = sorted((r for r in self.on(node) if r.code is not None), key=lambda r: (r.ended, r.local))
        head = ranks[0]
        self.agent(
            node,
            moment,
            "E",
            "torch/distributed/elastic/multiprocessing/api.py:869",
            f"failed (exitcode: {head.code}) local_rank: {head.local} (pid: {head.pid}) of binary: /usr/bin/python",
        )

        def entry(index: int, rank: Rank) -> list[str]:
            when = timestamps.torchrun_failure(rank.ended, self.zone)
            return pytorch.failure_entry(index, when, node, rank.number, rank.local, rank.code, rank.pid)

        others = [entry(i, r) for i, r in enumerate(ranks[1:], 1)]
        self.agent_plain(
            node,
            moment,
            *pytorch.torchrun_traceback(self.python, "ChildFailedError"),
            *pytorch.failure_report(self.script, entry(0, head), others),
        )
        exited = moment + timedelta(milliseconds=self.rng.randrange(100, 600))
        self.exits.append((exited, node, "Exited with exit code 1"))
        return exited

    def _deepspeed_reacts(self, node: str, first: datetime) -> datetime:
        """DeepSpeed's launcher on ``node`` saw a worker exit non-zero at its next poll: it terminates every
        worker it started, one after the other (SIGTERM, SIGKILL after 30 s), logs the failed worker's code
        against the last worker's command line, and exits with that code; returns when it exited."""
        failed = min((r for r in self.on(node) if r.code and r.ended == first), key=lambda r: r.local)
        moment = first + timedelta(seconds=self.rng.uniform(0.1, 1.0))
        for rank in self.on(node):
            self.deepspeed(node, moment, "INFO", "launch.py:319:sigkill_handler", f"Killing subprocess {rank.pid}")
            if not rank.lost and (rank.ended is None or rank.ended > moment):
                if rank.stuck:
                    rank.ended, rank.code = moment + timedelta(seconds=30, milliseconds=self.rng.randrange(5, 60)), -9
                else:
                    rank.ended, rank.code = moment + timedelta(milliseconds=self.rng.randrange(80, 1200)), -15
                moment = rank.ended
            moment += timedelta(milliseconds=self.rng.randrange(1, 15))
        self.deepspeed(
            node,
            moment,
            "ERROR",
            "launch.py:325:sigkill_handler",
            f"{self.worker_command(self.gpus_per_node - 1)} exits with return code = {failed.code}",
        )
        exited = moment + timedelta(milliseconds=self.rng.randrange(100, 600))
        self.exits.append((exited, node, f"ssh exited with exit code {failed.code % 256}"))
        return exited

    def _terminate(self, node: str, moment: datetime) -> None:
        """The node's part of the job is stopped from outside.

        Slurm signals every process of the step: torchrun's agent stops its workers and dies of the signal
        (SignalException). A pod's PID 1 is the ``bash -c`` that started torchrun and ignores SIGTERM, so
        the kubelet kills the container silently when the 30 s grace period is over. With pdsh, Slurm signals
        the batch script, the runner and pdsh: their ssh sessions close and the nodes' processes are killed
        with nothing more written to the output.
        """
        ranks = [r for r in self.on(node) if not r.lost and (r.ended is None or r.ended > moment)]
        if not ranks:
            return
        if self.launcher == "pdsh":
            for rank in ranks:
                rank.ended, rank.code = moment + timedelta(milliseconds=self.rng.randrange(100, 2500)), -15
            return
        if self.launcher == "pod":
            killed = moment + timedelta(seconds=30, milliseconds=self.rng.randrange(5, 90))
            for rank in ranks:
                rank.ended, rank.code = killed, -9
            return
        at = moment + timedelta(milliseconds=self.rng.randrange(5, 200))
        agent_api = "torch/distributed/elastic/agent/server/api.py:704"
        self.agent(node, at, "W", agent_api, "Received Signals.SIGTERM death signal, shutting down workers")
        for rank in ranks:
            if self.launched:
                self.agent(
                    node,
                    at,
                    "W",
                    "torch/distributed/elastic/multiprocessing/api.py:897",
                    f"Sending process {rank.pid} closing signal SIGTERM",
                )
            if rank.stuck:
                rank.ended, rank.code = at + timedelta(seconds=30, milliseconds=self.rng.randrange(5, 60)), -9
            else:
                rank.ended, rank.code = at + timedelta(milliseconds=self.rng.randrange(80, 1200)), -15
        last = max(r.ended for r in ranks)
        signalled = f"Process {self.agents[node]} got signal: 15"
        self.agent_plain(
            node,
            last,
            *pytorch.torchrun_traceback(self.python, "SignalException"),
            f"torch.distributed.elastic.multiprocessing.api.SignalException: {signalled}",
        )
        self.exits.append((last + timedelta(milliseconds=50), node, "Terminated"))

    def _srun_settle(self) -> None:
        if self.stopped_at is None:
            return
        for rank in self.ranks:
            if not rank.lost and (rank.ended is None or rank.ended > self.stopped_at):
                if rank.stuck:
                    rank.ended, rank.code = self.stopped_at + timedelta(seconds=30), -9
                else:
                    rank.ended = self.stopped_at + timedelta(milliseconds=self.rng.randrange(30, 900))
                    rank.code = -15

    def _srun_task_lines(self) -> None:
        """srun's (or pdsh's) report of each task's (or node's) end: one line per node and status, as they end."""
        if self.launcher == "pod":
            return
        if self.launcher == "pdsh":
            for moment, node, how in self.exits:
                self.step(
                    moment + timedelta(milliseconds=self.rng.randrange(5, 80)), f"pdsh@{self.nodes[0]}: {node}: {how}"
                )
            return
        if self.launcher == "torchrun":
            for moment, node, how in self.exits:
                at = moment + timedelta(milliseconds=self.rng.randrange(20, 300))
                if any(r.oom for r in self.on(node)):
                    how = "Out Of Memory"
                self.step(at, f"srun: error: {node}: task {self.nodes.index(node)}: {how}")
            return
        for node in self.nodes:
            ended = sorted((r for r in self.on(node) if r.code), key=lambda r: (r.ended, r.local))
            groups: list[list[Rank]] = []
            for rank in ended:
                previous = groups[-1][-1] if groups else None
                same = previous and (previous.code, previous.oom) == (rank.code, rank.oom)
                if same and rank.ended - previous.ended < timedelta(seconds=2):
                    groups[-1].append(rank)
                else:
                    groups.append([rank])
            for group in groups:
                moment = group[-1].ended + timedelta(milliseconds=self.rng.randrange(20, 400))
                status = SIGNALS.get(group[0].code, f"Exited with exit code {group[0].code}")
                if group[0].oom:
                    status = "Out Of Memory"
                self.step(moment, f"srun: error: {node}: {task_list([r.number for r in group])}: {status}")

    # -- rendering --

    def last_line(self) -> datetime:
        return max(line[0] for line in self.lines)

    def files(self, scheduler_output: str | None) -> dict[str, bytes]:
        """The workload's log files, path inside the bundle -> content."""
        out: dict[str, list[str]] = {}
        by_number = {r.number: r for r in self.ranks}
        for _, _, channel, key, text in sorted(self.lines, key=lambda line: line[:2]):
            if channel == "step":
                if scheduler_output:
                    out.setdefault(scheduler_output, []).append(text)
                continue
            if channel == "worker":
                rank = by_number[key]
                if self.launcher == "srun":
                    out.setdefault(scheduler_output, []).append(f"{rank.number}: {text}")
                    continue
                node = rank.node
                text = text if self.launcher == "pdsh" else f"[default{rank.local}]:{text}"
            else:
                node = key
            if self.launcher == "pdsh":  # pdsh prefixes each line with its host (pdsh/dsh.c: "%S: %s")
                out.setdefault(scheduler_output, []).append(f"{node}: {text}")
                continue
            stem = "torchrun" if self.launcher == "torchrun" else self.pods[node]
            out.setdefault(f"logs/{node}/{stem}.log", []).append(text)
        return {path: ("\n".join(lines) + "\n").encode() for path, lines in out.items()}
