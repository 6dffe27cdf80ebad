"""Storage: a Lustre outage seen from every client, and a full local disk under a checkpoint."""

from __future__ import annotations

from datetime import datetime, timedelta

from demo.draft import BundleDraft
from demo.kinds.application import SITE_PACKAGES, main_frames
from demo.kinds.scheduler import time_limit_event

FILESYSTEM = "fs1"
CHECKPOINT = f"{SITE_PACKAGES}/torch/distributed/checkpoint"


def _lustre_client_loses_servers(d: BundleDraft, node: str, fault: datetime, until: datetime) -> None:
    """One client's view of the outage: connections lost, RPCs and LNet sends timing out, tasks hung in I/O."""
    client = f"ffff{d.rng.getrandbits(40):010x}"
    mds = f"10.{d.rng.randrange(150, 160)}.0.{d.rng.randrange(2, 9)}@o2ib"
    oss = f"10.{d.rng.randrange(150, 160)}.1.{d.rng.randrange(2, 40)}@o2ib"
    ost = d.rng.randrange(0, 64)
    moment = d.after(fault, 0, 6)
    d.kernel(
        node,
        moment,
        f"Lustre: {FILESYSTEM}-MDT0000-mdc-{client}: Connection to {FILESYSTEM}-MDT0000 (at {mds}) "
        "was lost; in progress operations using this service will wait for recovery to complete",
    )
    d.kernel(
        node,
        d.after(moment, 0.5, 3),
        f"LustreError: 11-0: {FILESYSTEM}-OST{ost:04x}-osc-{client}: operation "
        f"ost_write to node {oss} failed: rc = -107",
    )
    pid = d.rng.randrange(3000, 9000)
    moment = d.after(moment, 20, 60)
    while moment < until:
        sent = int(moment.timestamp()) - d.rng.randrange(40, 200)
        d.kernel(
            node,
            moment,
            f"Lustre: {pid}:0:(client.c:2338:ptlrpc_expire_one_request()) @@@ Request sent has timed out for slow "
            f"reply: [sent {sent}/real {sent}]  req@{d.rng.getrandbits(64):016x} x{d.rng.getrandbits(50)}/t0(0) "
            f"o4->{FILESYSTEM}-OST{ost:04x}-osc-{client}@{oss}:6/4 lens 488/448 e 0 to 1 dl {sent + 48} ref 2 "
            f"fl Rpc:XQr/0/ffffffff rc 0/-1 job:'{d.job_id}.0'",
        )
        d.kernel(
            node,
            d.after(moment, 1, 5),
            f"LNet: {pid + 1}:0:(o2iblnd_cb.c:3397:kiblnd_check_conns()) Timed out "
            f"tx for {oss}: {d.rng.randrange(3, 9)} seconds",
        )
        moment = d.after(moment, 50, 130)
    hung = fault + timedelta(seconds=d.rng.uniform(121, 125))
    for report in range(10):  # the kernel reports hung tasks every 120 s, ten times per boot
        if hung >= until:
            break
        rank = d.training.on(node)[report % d.training.gpus_per_node]
        _hung_task(d, node, hung, rank.pid + 41 + report)
        hung += timedelta(seconds=120 + d.rng.uniform(0, 2))


def _hung_task(d: BundleDraft, node: str, moment: datetime, pid: int) -> None:
    for line in (
        f"INFO: task pt_data_worker:{pid} blocked for more than 122 seconds.",
        f"      Tainted: P           OE      {d.site.kernel} #21-Ubuntu",
        '"echo 0 > /proc/sys/kernel/hung_task_timeout_secs" disables this message.',
        f"task:pt_data_worker  state:D stack:0     pid:{pid}  tgid:{pid - 40} ppid:{pid - 41} flags:0x00004002",
        "Call Trace:",
        " <TASK>",
        " __schedule+0x27c/0x6a0",
        " schedule+0x33/0x110",
        " cl_sync_io_wait+0x1d2/0x3b0 [obdclass]",
        " ll_file_io_generic+0x4c5/0xd60 [lustre]",
        " ll_file_read_iter+0x1a3/0x2f0 [lustre]",
        " vfs_read+0x22c/0x310",
        " ksys_read+0x6f/0xf0",
        " do_syscall_64+0x5a/0x80",
        " </TASK>",
    ):
        d.kernel(node, moment, line)


def lustre_outage(d: BundleDraft) -> tuple[str, ...]:
    """The Lustre servers become unreachable from every node; every rank blocks in I/O, nobody reaches the
    next collective, and the job hangs until Slurm's time limit ends it (the time limit is a symptom)."""
    begin = d.begin()
    limit = d.start + timedelta(hours=d.rng.choice((2, 3, 4)))
    fault = limit - timedelta(minutes=d.rng.uniform(14, 45))
    d.training.train(begin, fault)
    for node in d.nodes:
        _lustre_client_loses_servers(d, node, fault, limit)
    for rank in d.training.ranks:
        d.training.hang(rank)
    d.slurm_stops(limit, "TIMEOUT", "DUE TO TIME LIMIT", time_limit_event(d))
    return ()


def disk_full(d: BundleDraft) -> tuple[str, ...]:
    """A node's local /raid fills while its ranks write their checkpoint shards: ENOSPC on that node."""
    fault = d.trains_for(30, 300)
    iteration = d.training.iteration
    for rank in d.training.on(d.culprit):
        moment = d.after(fault, 0, 4)
        path = f"/raid/ckpt-staging/{d.name}/iter_{iteration:07d}/__{rank.number}_0.distcp"
        frames = [
            *main_frames(d),
            "    save_checkpoint(iteration, model, optimizer, args.save)",
            '  File "/workspace/checkpointing.py", line 88, in save_checkpoint',
            "    dcp.save(state_dict, checkpoint_id=path)",
            f'  File "{CHECKPOINT}/filesystem.py", line 276, in _write_files_from_queue',
            "    _write_item(stream, data, write_item, storage_key)",
            f'  File "{CHECKPOINT}/filesystem.py", line 236, in _write_item',
            "    stream.write(data.getbuffer())",
        ]
        d.training.traceback(rank, moment, frames, f"OSError: [Errno 28] No space left on device: '{path}'")
    d.cascade(fault)
    d.failed()
    return (d.culprit,)
