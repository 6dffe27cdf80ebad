"""Drains with a human in the loop: triagers propose, admins approve (which runs the drain through the cluster's
scheduler) and resume; a real drain and resume on the single-node Slurm cluster; the circuit breaker; automatic
proposals and automatic execution only when the cluster's policy turns them on."""

from __future__ import annotations

import os
import time

import pytest
from django.core.exceptions import ValidationError

from access.roles import ADMIN, TRIAGER
from diagnoses.models import Cluster, Node
from handoffs.models import Drain
from handoffs.services import drains
from handoffs.services.drains import CircuitOpen

State = Drain.State


@pytest.fixture
def people(person):
    return {"triager": person(TRIAGER), "admin": person(ADMIN)}


@pytest.fixture
def slurm_cluster(db):
    """``slurm_cluster(*nodes, name="dgx-a", **scheduler_settings)``: a cluster whose scheduler is Slurm (commands
    run here), with its nodes."""

    def create(*nodes: str, name: str = "dgx-a", **scheduler_settings) -> Cluster:
        cluster = Cluster.objects.create(name=name, connector="slurm", scheduler_settings=scheduler_settings)
        Node.objects.bulk_create(Node(cluster=cluster, name=node) for node in nodes)
        return cluster

    return create


def test_the_circuit_breaker_refuses_the_drain_past_the_limit(
    slurm_cluster, people, django_capture_on_commit_callbacks
):
    cluster = slurm_cluster("node01", "node02", "node03")
    drains.drain_policy_set(cluster=cluster, user=people["admin"], max_drained=2)
    proposed = [
        drains.drain_propose(node=node, reason="xid 79", user=people["triager"]) for node in cluster.nodes.all()
    ]
    with django_capture_on_commit_callbacks() as queued:  # approved: their commands queued, not run here
        drains.drain_approve(drain=proposed[0], user=people["admin"])
        drains.drain_approve(drain=proposed[1], user=people["admin"])
    assert len(queued) == 2

    with pytest.raises(CircuitOpen, match="already drained or being drained, and its policy allows at most 2"):
        drains.drain_approve(drain=proposed[2], user=people["admin"])
    assert Drain.objects.get(pk=proposed[2].pk).state == State.PROPOSED

    Drain.objects.filter(pk=proposed[0].pk).update(state=State.RESUMED)  # one node back: room for another
    with django_capture_on_commit_callbacks():
        assert drains.drain_approve(drain=proposed[2], user=people["admin"]).state == State.APPROVED


def test_the_breaker_holds_again_when_the_drain_runs(slurm_cluster, people):
    cluster = slurm_cluster("node01", "node02")
    drains.drain_policy_set(cluster=cluster, user=people["admin"], max_drained=1)
    first, second = (drains.drain_propose(node=n, reason="xid", user=people["triager"]) for n in cluster.nodes.all())
    Drain.objects.filter(pk=first.pk).update(state=State.DRAINED)
    Drain.objects.filter(pk=second.pk).update(state=State.APPROVED)  # approved before the limit was lowered
    ran = drains.drain_run(drain_id=second.pk)
    assert ran.state == State.FAILED
    assert ran.drain_answer.startswith("circuit breaker: 1 node(s) of dgx-a already drained")


def test_one_drain_at_a_time_per_node_and_only_schedulers_that_can(slurm_cluster, people, db):
    cluster = slurm_cluster("node01")
    node = cluster.nodes.get()
    drains.drain_propose(node=node, reason="xid 79", user=people["triager"])
    with pytest.raises(ValidationError, match="already has a drain"):
        drains.drain_propose(node=node, reason="again", user=people["triager"])
    with pytest.raises(ValidationError, match="say why"):
        drains.drain_propose(node=node, reason="  ", user=people["triager"])
    uploads = Cluster.objects.create(name="uploaded")
    with pytest.raises(ValidationError, match="cannot drain nodes"):
        drains.drain_propose(node=Node.objects.create(cluster=uploads, name="n1"), reason="x", user=people["triager"])


def test_a_failing_drain_command_is_recorded(slurm_cluster, people, django_capture_on_commit_callbacks):
    cluster = slurm_cluster("node01", command_prefix=["false"])  # the login node cannot be reached
    drain = drains.drain_propose(node=cluster.nodes.get(), reason="xid 79", user=people["triager"])
    with django_capture_on_commit_callbacks(execute=True):
        drains.drain_approve(drain=drain, user=people["admin"])
    drain.refresh_from_db()
    assert drain.state == State.FAILED
    assert drain.drain_answer.startswith("dgx-a: scontrol exited 1")
    assert drain.decided_by == people["admin"]


def test_automatic_proposals_and_execution_only_when_the_policy_says_so(
    slurm_cluster, people, django_capture_on_commit_callbacks
):
    cluster = slurm_cluster("node01", "node02", "node03", command_prefix=["true"])  # every command "succeeds"
    nodes = list(cluster.nodes.all())
    assert drains.drain_propose_repeat_offender(node=nodes[0], count=3) is None  # off by default
    drains.drain_policy_set(cluster=cluster, user=people["admin"], propose_repeat_offenders=True, max_drained=1)
    proposal = drains.drain_propose_repeat_offender(node=nodes[0], count=3)
    assert (proposal.state, proposal.automatic, proposal.proposed_by) == (State.PROPOSED, True, None)
    assert proposal.reason == "repeat offender: root cause of 3 attempts"

    drains.drain_policy_set(cluster=cluster, user=people["admin"], run_automatically=True)
    with django_capture_on_commit_callbacks(execute=True):
        ran = drains.drain_propose_repeat_offender(node=nodes[1], count=4)
    ran.refresh_from_db()
    assert (ran.state, ran.decided_by) == (State.DRAINED, None)
    with django_capture_on_commit_callbacks(execute=True):
        held = drains.drain_propose_repeat_offender(node=nodes[2], count=5)
    assert Drain.objects.get(pk=held.pk).state == State.PROPOSED  # the breaker holds automatic execution too


# -- the real Slurm cluster ----------------------------------------------------------------------------------------


def sinfo(slurm, node: str) -> str:
    return slurm.run("sinfo", "-h", "-n", node, "-o", "%T|%E")


@pytest.mark.slurm
@pytest.mark.skipif(os.geteuid() != 0, reason="the Slurm tests run a real Slurm cluster, which needs root")
def test_a_drain_and_a_resume_on_the_real_slurm_cluster(
    slurm, slurm_cluster, people, django_capture_on_commit_callbacks
):
    host = slurm.run("hostname", "-s")
    cluster = slurm_cluster(host, name="faultline-slurm")
    reason = f"xid 79 test {os.getpid()}"
    drain = drains.drain_propose(node=cluster.nodes.get(), reason=reason, user=people["triager"])
    try:
        with django_capture_on_commit_callbacks(execute=True):
            drains.drain_approve(drain=drain, user=people["admin"])
        drained = sinfo(slurm, host)
        drain.refresh_from_db()
        assert drain.state == State.DRAINED, drain.drain_answer
        state, shown_reason = drained.split("|", 1)
        assert state in ("drained", "draining"), drained  # another helper's job may still run on it
        assert shown_reason == f"faultline: {reason}"
        assert "DRAIN" in drain.drain_answer
        assert f"Reason=faultline: {reason}" in drain.drain_answer
        assert drain.decided_by == people["admin"]
        assert drain.proposed_by == people["triager"]

        drains.drain_resume(drain=drain, user=people["admin"])
        drain.refresh_from_db()
        assert drain.state == State.RESUMED
        assert drain.resumed_by == people["admin"]
        assert "DRAIN" not in drain.resume_answer
        state = sinfo(slurm, host).split("|", 1)[0].rstrip("*")  # *: slurmd slow to answer a moment
        assert state in ("idle", "mixed", "allocated", "completing"), state
    finally:  # never leave the shared node drained
        if f"faultline: {reason}" in sinfo(slurm, host):
            slurm.run("scontrol", "update", f"NodeName={host}", "State=RESUME")
            deadline = time.monotonic() + 30
            while "drain" in sinfo(slurm, host).split("|", 1)[0] and time.monotonic() < deadline:
                time.sleep(0.5)


def test_a_drain_on_a_kueue_cluster_cordons_the_node(kubernetes_api, people, django_capture_on_commit_callbacks):
    node = sorted(kubernetes_api.nodes)[0]
    cluster = Cluster.objects.create(name="k8s-a", connector="kueue",
                                     scheduler_settings={"host": kubernetes_api.url, "backoff": 0})  # fmt: skip
    drain = drains.drain_propose(node=Node.objects.create(cluster=cluster, name=node), reason="nvlink errors",
                                 user=people["triager"])  # fmt: skip
    with django_capture_on_commit_callbacks(execute=True):
        drains.drain_approve(drain=drain, user=people["admin"])
    drain.refresh_from_db()
    assert drain.state == State.DRAINED
    assert drain.drain_answer == "unschedulable=true faultline.dev/drain-reason=faultline: nvlink errors"
    assert kubernetes_api.nodes[node]["spec"]["unschedulable"] is True
    drains.drain_resume(drain=drain, user=people["admin"])
    assert kubernetes_api.nodes[node]["spec"]["unschedulable"] is False


def test_a_diagnosis_that_makes_a_repeat_offender_proposes_its_drain_when_the_policy_asks(
    make_bundle, store, people, django_capture_on_commit_callbacks
):
    from datetime import UTC, datetime, timedelta

    start = datetime.now(UTC).replace(microsecond=0) - timedelta(hours=2)

    def analysed(job_id: str):
        with django_capture_on_commit_callbacks(execute=True):  # the announcement after commit, its task in-process
            return store(make_bundle(job_id=job_id, start=start))

    first = analysed("1")
    Cluster.objects.filter(pk=first.cluster_id).update(connector="slurm")
    drains.drain_policy_set(cluster=first.cluster, user=people["admin"], propose_repeat_offenders=True)
    analysed("2")
    assert not Drain.objects.exists()  # root cause twice: not yet a repeat offender
    third = analysed("3")
    drain = Drain.objects.get()
    assert (drain.node.name, drain.state, drain.automatic) == ("node02", State.PROPOSED, True)
    # the proposal cites the history that made the node a repeat offender, and the attempt that did
    assert drain.reason == (
        "repeat offender: root cause of 3 attempts in 30 days (job 3#0 gpu.bus, job 2#0 gpu.bus, job 1#0 gpu.bus)"
    )
    assert drain.attempt_id == third.pk
    analysed("4")
    assert Drain.objects.count() == 1  # one at a time per node
