"""The scheduler ends the attempt: time limit, preemption, cancellation, a lost node, Kueue's evictions."""

from __future__ import annotations

from datetime import timedelta

from demo.draft import CLUSTER_QUEUE, NAMESPACE, BundleDraft


def slurm_time_limit(d: BundleDraft) -> tuple[str, ...]:
    """The job trains happily until its time limit; slurmstepd cancels it."""
    begin = d.begin()
    limit = d.start + timedelta(hours=d.rng.choice((2, 3, 4, 6)))
    d.training.train(begin, limit)
    d.slurm_stops(limit, "TIMEOUT", "DUE TO TIME LIMIT", time_limit_event(d))
    return ()


def time_limit_event(d: BundleDraft) -> tuple[str, str]:
    return ("TimeLimit", f"Time limit exhausted for JobId={d.job_id}")


EARLIER_NCCL = "2.21.5"  # the NCCL of the site before it upgraded (demo.training.NCCL_VERSION after)


def training_completed(d: BundleDraft) -> tuple[str, ...]:
    """A run that worked: it trains to its last iteration on the NCCL of the time (before the site's upgrade), every
    rank exits cleanly and Slurm records the job COMPLETED. The good attempt "What changed" compares a failure with."""
    d.training.nccl_version = EARLIER_NCCL
    d.training.style = "megatron"
    begin = d.begin()
    done = d.fault_after(begin, 30, 120)
    d.training.train(begin, done)
    finished = d.after(d.training.last_progress, 0.5, 3)
    d.training.completed(finished)
    for rank in d.training.ranks:
        d.training.end(rank, d.after(finished, 2, 20), 0)
    d.finish("COMPLETED", exit_code="0:0", completion=[f"_job_complete: JobId={d.job_id} WEXITSTATUS 0"])
    return ()


def slurm_preemption(d: BundleDraft) -> tuple[str, ...]:
    """A higher-priority job preempts this one (PreemptMode=CANCEL)."""
    moment = d.trains_for(20, 300)
    other = int(d.job_id) + d.rng.randrange(50, 5000)
    message = f"preempted JobId={d.job_id} has been killed to reclaim resources for JobId={other}"
    d.slurm_stops(moment, "PREEMPTED", "DUE TO PREEMPTION", ("Preempted", message))
    return ()


def user_cancelled(d: BundleDraft) -> tuple[str, ...]:
    """The user cancels the job (``scancel``)."""
    moment = d.trains_for(10, 300)
    message = f"_slurm_rpc_kill_job: REQUEST_KILL_JOB JobId={d.job_id} uid {d.uid}"
    d.slurm_stops(moment, "CANCELLED", "", ("KillJob", message), reason=f"CANCELLED by {d.uid}")
    return ()


def node_lost(d: BundleDraft) -> tuple[str, ...]:
    """A node dies without a word (its logs just stop); slurmctld marks it DOWN after SlurmdTimeout and the
    job ends NODE_FAIL; a surviving node's slurmstepd prints the cancellation."""
    fault = d.trains_for(20, 300)
    node = d.culprit
    d.logs[node].stop(fault)
    d.training.lose_node(node, fault)
    down = d.after(fault, 300, 330)
    d.event(
        "slurmctld.json",
        down,
        node,
        "slurmctld",
        "NodeNotResponding",
        f"error: Nodes {node} not responding, setting DOWN",
        needed=True,
    )
    d.event(
        "slurmctld.json",
        down,
        node,
        "slurmctld",
        "JobKilled",
        f"Killing JobId={d.job_id} on failed node {node}",
        needed=True,
    )
    if d.training.launcher != "pdsh":
        d.training.step(d.after(down, 0.2, 1.0), f"srun: error: Node failure on {node}")
    d.slurm_cancels(d.after(down, 1.0, 2.0), "DUE TO NODE FAILURE, SEE SLURMCTLD LOG FOR DETAILS", wait=62, step=False)
    d.finish(
        "NODE_FAIL", exit_code="0:0", reason="NodeFail", completion=[f"_job_complete: JobId={d.job_id} WTERMSIG 9"]
    )
    return (node,)


def kueue_pods_ready_timeout(d: BundleDraft) -> tuple[str, ...]:
    """One pod of the workload cannot be scheduled; the others wait in the rendezvous until Kueue's
    waitForPodsReady timeout (5 min) evicts the workload."""
    d.admit()
    pending = f"{d.name}-workers-0-{len(d.nodes)}-" + "".join(
        d.rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(5)
    )
    free = d.rng.randrange(0, 3)
    moment = d.after(d.start, 1, 3)
    while moment < d.start + timedelta(minutes=5):
        d.event(
            "kubernetes.json",
            moment,
            None,
            "default-scheduler",
            "FailedScheduling",
            f"0/{len(d.nodes) + 9} nodes are available: {len(d.nodes) + 6 - free} Insufficient nvidia.com/gpu, 3 "
            "node(s) had untolerated taint {cloud.google.com/gke-nodepool: system}. preemption: 0/"
            f"{len(d.nodes) + 9} nodes are available: {len(d.nodes) + 9} No preemption victims found for incoming "
            f"pod. pod={NAMESPACE}/{pending}",
        )
        moment = d.after(moment, 55, 70)
    for node in d.nodes:
        d.training.agent_banner(node, d.after(d.start, 4, 9))
    evicted = d.start + timedelta(minutes=5, seconds=d.rng.uniform(0, 2))
    workload = f"{NAMESPACE}/{d.job_id}"
    d.event(
        "kueue.json",
        evicted,
        None,
        "kueue-workload-controller",
        "EvictedDueToPodsReadyTimeout",
        f"Exceeded the PodsReady timeout {workload}",
        needed=True,
    )
    d.event(
        "kueue.json", evicted, None, "kueue-workload-controller", "PodsReady", "Not all pods are ready or succeeded"
    )
    d.training.signal(d.after(evicted, 0.5, 1.5))
    for node in d.nodes:
        d.event("kubernetes.json", d.training.stopped_at, node, "kubelet", "Killing", "Stopping container pytorch")
    d.finish("Evicted", reason="PodsReadyTimeout")
    return ()


def kueue_preemption(d: BundleDraft) -> tuple[str, ...]:
    """Kueue preempts the running workload to admit a higher-priority one in its ClusterQueue."""
    moment = d.trains_for(20, 300)
    uid = d.uuid()
    d.event(
        "kueue.json",
        moment,
        None,
        "kueue-admission",
        "Preempted",
        f"Preempted to accommodate a workload (UID: {uid}, JobUID: {uid}) due to prioritization in the ClusterQueue",
        needed=True,
    )
    d.event(
        "kueue.json",
        moment,
        None,
        "kueue-workload-controller",
        "EvictedDueToPreempted",
        f"Preempted to accommodate a workload (UID: {uid}) in the ClusterQueue {CLUSTER_QUEUE}",
    )
    d.training.signal(d.after(moment, 0.5, 2))
    for node in d.nodes:
        d.event("kubernetes.json", d.training.stopped_at, node, "kubelet", "Killing", "Stopping container pytorch")
    d.finish("Evicted", reason="Preempted")
    return ()
