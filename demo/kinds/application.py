"""The program's own failures: memory (host and GPU), exceptions, numerics, a broken environment."""

from __future__ import annotations

from datetime import datetime, timedelta

from demo import pytorch
from demo.draft import GPU_MEMORY_GIB, BundleDraft
from demo.training import Rank

SITE_PACKAGES = "/usr/local/lib/python3.10/dist-packages"


def main_frames(d: BundleDraft) -> list[str]:
    script = f"/workspace/{d.training.script}"
    return [
        f'  File "{script}", line {d.rng.randrange(480, 620)}, in <module>',
        "    main()",
        f'  File "{script}", line {d.rng.randrange(380, 470)}, in main',
        "    train(args, model, optimizer, train_loader)",
        f'  File "{script}", line {d.rng.randrange(200, 370)}, in train',
    ]


def _oom_killer(d: BundleDraft, node: str, rank: Rank, moment: datetime, *, cgroup: str) -> str:
    """The kernel's OOM killer report for ``rank``'s process (the whole host's memory, or the pod's limit);
    returns its ``Killed process`` line."""
    gib = 1024 * 1024  # in kB
    memcg = cgroup.startswith("/kubepods")
    limit = d.rng.choice((1600, 1800, 2000)) * gib
    rss = int(limit * d.rng.uniform(0.3, 0.5))
    score = -997 if memcg else 0
    uid = 0 if memcg else d.uid
    d.kernel(
        node,
        moment,
        "python invoked oom-killer: gfp_mask=0x140cca(GFP_HIGHUSER_MOVABLE|__GFP_COMP), order=0, "
        f"oom_score_adj={score}",
    )
    d.kernel(
        node,
        moment,
        f"CPU: {d.rng.randrange(0, 224)} PID: {rank.pid} Comm: python Tainted: P           OE      "
        f"{d.site.kernel} #21-Ubuntu",
    )
    if memcg:
        d.kernel(node, moment, f"memory: usage {limit}kB, limit {limit}kB, failcnt {d.rng.randrange(1, 900)}")
    scope = f"oom_memcg={cgroup.rsplit('/', 1)[0]}" if memcg else "global_oom"
    d.kernel(
        node,
        moment,
        f"oom-kill:constraint={'CONSTRAINT_MEMCG' if memcg else 'CONSTRAINT_NONE'},nodemask=(null),cpuset=/,"
        f"mems_allowed=0-1,{scope},task_memcg={cgroup},task=python,pid={rank.pid},uid={uid}",
    )
    killed = (
        f"{'Memory cgroup out of memory' if memcg else 'Out of memory'}: Killed process {rank.pid} (python) "
        f"total-vm:{int(rss * d.rng.uniform(1.05, 1.3))}kB, anon-rss:{rss}kB, "
        f"file-rss:{d.rng.randrange(10**5, 10**6)}kB, shmem-rss:{d.rng.randrange(10**6, 10**7)}kB, UID:{uid} "
        f"pgtables:{rss // 500}kB oom_score_adj:{score}"
    )
    d.kernel(node, moment, killed)
    d.kernel(
        node,
        moment + timedelta(milliseconds=d.rng.randrange(200, 900)),
        f"oom_reaper: reaped process {rank.pid} (python), now anon-rss:0kB, file-rss:0kB, shmem-rss:0kB",
    )
    return killed


def host_oom(d: BundleDraft) -> tuple[str, ...]:
    """A rank's host memory grows until the kernel's OOM killer ends it; Slurm records OUT_OF_MEMORY. A job
    launched over pdsh runs in the user's ssh sessions, outside Slurm's cgroups: Slurm sees only the batch
    script fail."""
    fault = d.trains_for(20, 300)
    rank = d.rank(d.culprit, d.rng.randrange(d.training.gpus_per_node))
    if d.training.launcher == "pdsh":
        cgroup = f"/user.slice/user-{d.uid}.slice/session-{d.rng.randrange(1200, 9000)}.scope"
        _oom_killer(d, d.culprit, rank, fault, cgroup=cgroup)
        d.training.end(rank, fault, -9)
        d.cascade(fault)
        d.failed()
        return (d.culprit,)
    cgroup = f"/system.slice/slurmstepd.scope/job_{d.job_id}/step_0/user/task_{rank.local}"
    _oom_killer(d, d.culprit, rank, fault, cgroup=cgroup)
    d.training.end(rank, fault, -9)
    rank.oom = True
    d.training.step(
        d.after(fault, 0.3, 1.5),
        f"slurmstepd: error: Detected 1 oom_kill event in StepId={d.job_id}.0. "
        "Some of the step tasks have been OOM Killed.",
    )
    d.cascade(fault)
    d.finish("OUT_OF_MEMORY", exit_code="0:125", completion=[f"_job_complete: JobId={d.job_id} OOM failure"])
    return (d.culprit,)


def k8s_oom_killed(d: BundleDraft) -> tuple[str, ...]:
    """A pod exceeds its memory limit: the cgroup OOM killer kills its container whole (OOMKilled, 137)."""
    fault = d.trains_for(20, 300)
    node = d.culprit
    rank = d.rank(node, d.rng.randrange(d.training.gpus_per_node))
    pod_uid = "".join(d.rng.choice("0123456789abcdef") for _ in range(32))
    cgroup = f"/kubepods.slice/kubepods-pod{pod_uid}.slice/cri-containerd-{d.rng.getrandbits(128):032x}.scope"
    killed = _oom_killer(d, node, rank, fault, cgroup=cgroup)
    d.kernel(node, fault, f"Tasks in {cgroup} are going to be killed due to memory.oom.group set")
    for other in d.training.on(node):
        if other is not rank:
            d.kernel(
                node,
                fault,
                f"Memory cgroup out of memory: Killed process {other.pid} (python) "
                f"total-vm:{d.rng.randrange(10**8, 2 * 10**8)}kB, anon-rss:{d.rng.randrange(10**7, 9 * 10**7)}kB, "
                f"file-rss:{d.rng.randrange(10**5, 10**6)}kB, shmem-rss:0kB, UID:0 "
                f"pgtables:{d.rng.randrange(10**4, 10**5)}kB oom_score_adj:-997",
            )
    d.event("kubernetes.json", d.after(fault, 0.5, 3), node, "kernel-monitor", "OOMKilling", killed, needed=True)
    d.training.kill_container(node, fault + timedelta(milliseconds=d.rng.randrange(50, 400)))
    d.finish("Failed", exit_code="137", reason="OOMKilled")
    return (node,)


def cuda_oom(d: BundleDraft) -> tuple[str, ...]:
    """One rank runs out of GPU memory (``torch.OutOfMemoryError``) on a long batch."""
    fault = d.trains_for(5, 200)
    rank = d.rank(d.culprit, d.rng.randrange(d.training.gpus_per_node))
    total = GPU_MEMORY_GIB[d.site.gpu_model]
    frames = [
        *main_frames(d),
        "    loss = model(**batch).loss",
        f'  File "{SITE_PACKAGES}/torch/nn/modules/module.py", line 1736, in _wrapped_call_impl',
        "    return self._call_impl(*args, **kwargs)",
        f'  File "{SITE_PACKAGES}/torch/nn/functional.py", line 3104, in cross_entropy',
        "    return torch._C._nn.cross_entropy_loss(input, target, weight, _Reduction.get_enum(reduction), "
        "ignore_index, label_smoothing)",
    ]
    d.training.traceback(
        rank, fault, frames, pytorch.cuda_oom(rank.local, total, d.rng.uniform(2, 12), d.rng.uniform(0.3, 1.9))
    )
    d.cascade(fault)
    d.failed()
    return (d.culprit,)


def python_exception(d: BundleDraft) -> tuple[str, ...]:
    """A malformed sample makes one rank's collate function raise ``KeyError``; the others wait and time out."""
    fault = d.trains_for(5, 300)
    rank = d.rank(d.culprit, d.rng.randrange(d.training.gpus_per_node))
    key = d.rng.choice(("input_ids", "attention_mask", "labels", "pixel_values"))
    frames = [
        *main_frames(d),
        "    batch = next(data_iterator)",
        f'  File "{SITE_PACKAGES}/torch/utils/data/dataloader.py", line 708, in __next__',
        "    data = self._next_data()",
        f'  File "{SITE_PACKAGES}/torch/utils/data/dataloader.py", line 764, in _next_data',
        "    data = self._dataset_fetcher.fetch(index)  # may raise StopIteration",
        f'  File "{SITE_PACKAGES}/torch/utils/data/_utils/fetch.py", line 55, in fetch',
        "    return self.collate_fn(data)",
        '  File "/workspace/data/collate.py", line 57, in __call__',
        f'    features = [example["{key}"] for example in batch]',
    ]
    d.training.traceback(rank, fault, frames, f"KeyError: '{key}'")
    d.cascade(fault)
    d.failed()
    return (d.culprit,)


def nan_loss(d: BundleDraft) -> tuple[str, ...]:
    """Training diverges: the loss turns NaN and the script stops itself on every rank."""
    begin = d.begin()
    fault = d.fault_after(begin, 30, 400)
    diverged = fault - timedelta(seconds=d.training.seconds_per_iteration * d.training.log_interval * 3.5)
    d.training.train(begin, fault, nan_from=diverged)
    logger = d.training.logging_rank
    d.training.print(logger, d.after(fault, 0.1, 0.5), "loss is nan, stopping training!")
    for rank in d.training.ranks:
        d.training.end(rank, d.after(fault, 0.8, 2.5), 1)
    d.failed()
    return ()


def import_error(d: BundleDraft) -> tuple[str, ...]:
    """The job's image lacks a module: every rank fails at import, before NCCL is ever initialised."""
    training = d.training
    started = d.after(d.start, 4, 12)
    if d.slurm:
        training.step(d.start, f"MASTER_ADDR={d.nodes[0]} MASTER_PORT=29500 WORLD_SIZE={training.world}")
    else:
        d.admit()
    module, statement = d.rng.choice(
        (
            ("flash_attn", "from flash_attn import flash_attn_func"),
            ("transformer_engine", "import transformer_engine.pytorch as te"),
            ("apex", "from apex.optimizers import FusedAdam"),
        )
    )
    training.start_launchers(started)
    for rank in training.ranks:
        moment = d.after(started, 3, 9)
        frames = [
            f'  File "/workspace/{training.script}", line {d.rng.randrange(12, 30)}, in <module>',
            f"    {statement}",
        ]
        training.traceback(rank, moment, frames, f"ModuleNotFoundError: No module named '{module}'", prefixed=False)
    d.failed()
    return ()
