"""Hangs: ranks that wait for ever, and what the logs say (or do not say) about why."""

from __future__ import annotations

from datetime import timedelta

from demo.draft import BundleDraft
from demo.kinds.scheduler import time_limit_event


def nccl_timeouts_only(d: BundleDraft) -> tuple[str, ...]:
    """One rank falls behind into an earlier collective and stays there; every rank's watchdog fires,
    but no log says why (no Xid, no link event, no exception): the honest outcome is ``unattributed``."""
    fault = d.trains_for(20, 300)
    straggler = d.rng.choice(d.training.ranks)
    seq, op, numel = d.training.collective()
    d.cascade(fault, spare=(straggler,))
    moment = fault + timedelta(seconds=600, milliseconds=d.rng.randrange(0, 300))
    if d.training.is_alive(straggler, moment):
        d.training.watchdog_timeout(straggler, moment, seq - 1, op, numel)
    d.failed()
    return ()


def collective_hang(d: BundleDraft) -> tuple[str, ...]:
    """A collective never completes: one rank never joins it, every other rank waits in it, and every
    rank's progress stops at one iteration. The job runs without async error handling
    (TORCH_NCCL_ASYNC_ERROR_HANDLING=0, the behaviour of older PyTorch), so 600 s later each waiting rank's
    NCCL watchdog reports the timeout and does nothing more: the ranks stay blocked until Slurm's time
    limit ends the job. The training loop is Megatron-LM's or DeepSpeed's, whose progress lines the
    default pack knows."""
    training = d.training
    training.environment["TORCH_NCCL_ASYNC_ERROR_HANDLING"] = "0"
    if training.style == "logging":
        training.style = "megatron"
    begin = d.begin()
    limit = d.start + timedelta(hours=d.rng.choice((2, 3, 4, 6)))
    training.train(begin, d.fault_after(begin, 15, (limit - begin).total_seconds() / 60 - 30))
    stalled = d.after(training.last_progress, 1, 5)
    seq, op, numel = training.collective()
    straggler = d.rng.choice(training.ranks)
    for rank in training.ranks:
        if rank is not straggler:
            moment = stalled + timedelta(seconds=600, milliseconds=d.rng.randrange(0, 400))
            training.watchdog_report(rank, moment, seq, op, numel)
    d.slurm_stops(limit, "TIMEOUT", "DUE TO TIME LIMIT", time_limit_event(d))
    return ()


def hang_after_completion(d: BundleDraft) -> tuple[str, ...]:
    """A Megatron-LM run, resumed near its end, reaches its last iteration and prints that training is
    done; every rank but one exits cleanly, and that one never does (it waits at exit for a data loader
    worker that never ends). The job sits idle until its user cancels it."""
    training = d.training
    training.style = "megatron"
    begin = d.begin()
    done = d.fault_after(begin, 20, 300)
    every = timedelta(seconds=training.seconds_per_iteration * training.log_interval)
    training.train_iters = training.iteration + training.log_interval * max(1, (done - begin) // every)
    training.train(begin, done + timedelta(hours=1))
    finished = d.after(training.last_progress, 0.5, 3)
    training.completed(finished)
    hung = d.rng.choice(training.ranks)
    for rank in training.ranks:
        if rank is not hung:
            training.end(rank, d.after(finished, 2, 20), 0)
    cancelled = d.after(finished, 20 * 60, 5 * 3600)
    message = f"_slurm_rpc_kill_job: REQUEST_KILL_JOB JobId={d.job_id} uid {d.uid}"
    d.slurm_stops(cancelled, "CANCELLED", "", ("KillJob", message), reason=f"CANCELLED by {d.uid}")
    return ()
