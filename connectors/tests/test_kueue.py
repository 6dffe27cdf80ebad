"""The Kueue/Kubernetes connector against a local double of the Kubernetes API (tests/kubernetes_double.py)."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from connectors.base import ConnectorError, DiscoveredAttempt
from connectors.gather import gather
from connectors.kubernetes.kueue import KueueScheduler
from connectors.tests.kubernetes_double import KubernetesDouble, parse_bool
from engine import Engine, load_rules

ROOT = Path(__file__).resolve().parents[2]


def condition(kind, status, reason, message, at):
    return {
        "type": kind,
        "status": status,
        "reason": reason,
        "message": message,
        "lastTransitionTime": at,
        "observedGeneration": 1,
    }


def workload(name, owner, conditions, *, namespace="ml", requeues=None):
    status = {
        "admission": {
            "clusterQueue": "gpu-cq",
            "podSetAssignments": [
                {
                    "name": "main",
                    "flavors": {"nvidia.com/gpu": "a100"},
                    "resourceUsage": {"nvidia.com/gpu": "16"},
                    "count": 2,
                }
            ],
        },
        "conditions": conditions,
    }
    if requeues is not None:
        status["requeueState"] = {"count": requeues}
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta1",
        "kind": "Workload",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": f"uid-{name}",
            "resourceVersion": "1",
            "creationTimestamp": "2026-11-02T09:59:00Z",
            "labels": {"kueue.x-k8s.io/job-uid": f"uid-{owner}"},
            "ownerReferences": [
                {
                    "apiVersion": "batch/v1",
                    "kind": "Job",
                    "name": owner,
                    "uid": f"uid-{owner}",
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": {
            "queueName": "team-a",
            "podSets": [
                {
                    "name": "main",
                    "count": 2,
                    "template": {"spec": {"containers": [{"name": "trainer", "image": "train:1"}]}},
                }
            ],
        },
        "status": status,
    }


def pod(name, job, node, *, terminated=None, last=None, restarts=0, namespace="ml", start="2026-11-02T10:00:05Z"):
    state = {"terminated": terminated} if terminated else {"running": {"startedAt": start}}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": f"uid-{name}",
            "labels": {"batch.kubernetes.io/job-name": job, "job-name": job},
        },
        "spec": {
            "nodeName": node,
            "containers": [{"name": "trainer", "image": "train:1"}],
            "restartPolicy": "OnFailure",
        },
        "status": {
            "phase": "Failed" if terminated else "Running",
            "startTime": start,
            "containerStatuses": [
                {
                    "name": "trainer",
                    "state": state,
                    "lastState": {"terminated": last} if last else {},
                    "ready": False,
                    "restartCount": restarts,
                    "image": "train:1",
                    "imageID": "sha256:1",
                    "containerID": "containerd://1",
                    "started": False,
                }
            ],
        },
    }


def terminated(code, reason, at):
    return {
        "exitCode": code,
        "reason": reason,
        "startedAt": "2026-11-02T10:00:06Z",
        "finishedAt": at,
        "containerID": "containerd://1",
    }


def event(namespace, kind, name, reason, message, at, *, component="kubelet", host=None):
    return {
        "metadata": {"name": f"{name}.{reason}", "namespace": namespace},
        "involvedObject": {"kind": kind, "namespace": namespace, "name": name, "apiVersion": "v1"},
        "reason": reason,
        "message": message,
        "source": {"component": component, **({"host": host} if host else {})},
        "firstTimestamp": at,
        "lastTimestamp": at,
        "count": 1,
        "type": "Warning",
        "eventTime": None,
        "reportingComponent": component,
        "reportingInstance": host or "",
    }


ADMITTED = [
    condition(
        "QuotaReserved", "True", "QuotaReserved", "Quota reserved in ClusterQueue gpu-cq", "2026-11-02T10:00:00Z"
    ),
    condition("Admitted", "True", "Admitted", "The workload is admitted", "2026-11-02T10:00:00Z"),
]


@pytest.fixture
def cluster():
    double = kubernetes_api()
    yield double
    double.close()


def kubernetes_api() -> KubernetesDouble:
    """A Kubernetes API with Kueue workloads: ml/train failed (OOMKilled, exit 1), ml/sweep evicted, and
    workloads that succeeded, still run, never ran a pod, or ended long ago."""
    workloads = [
        workload(
            "job-train-1a2b3",
            "train",
            [
                *ADMITTED,
                condition("PodsReady", "True", "PodsReady", "All pods reached readiness", "2026-11-02T10:00:30Z"),
                condition(
                    "Finished", "True", "Failed", "Job has reached the specified backoff limit", "2026-11-02T10:42:00Z"
                ),
            ],
        ),
        workload(
            "job-sweep-4c5d6",
            "sweep",
            [
                condition("QuotaReserved", "False", "Pending", "evicted", "2026-11-02T10:20:00Z"),
                condition(
                    "PodsReady", "False", "PodsReady", "Not all pods are ready or succeeded", "2026-11-02T10:10:00Z"
                ),
                condition(
                    "Evicted",
                    "True",
                    "PodsReadyTimeout",
                    "Exceeded the PodsReady timeout ml/job-sweep-4c5d6",
                    "2026-11-02T10:20:00Z",
                ),
            ],
            requeues=1,
        ),
        workload(
            "job-done-7e8f9",
            "done",
            [
                *ADMITTED,
                condition("Finished", "True", "Succeeded", "Job finished successfully", "2026-11-02T10:30:00Z"),
            ],
        ),
        workload("job-live-0a1b2", "live", ADMITTED),
        workload(
            "job-gone-3c4d5",
            "gone",
            [
                condition(
                    "Evicted",
                    "True",
                    "Preempted",
                    "Preempted to accommodate a workload (UID: 9)",
                    "2026-11-02T10:25:00Z",
                ),
            ],
        ),
        workload(
            "job-old-6e7f8",
            "old",
            [
                *ADMITTED,
                condition(
                    "Finished", "True", "Failed", "Job has reached the specified backoff limit", "2026-10-01T10:00:00Z"
                ),
            ],
        ),
    ]
    pods = [
        pod(
            "train-0-xk2p9",
            "train",
            "gpu-node-1",
            restarts=1,
            terminated=terminated(137, "OOMKilled", "2026-11-02T10:41:50Z"),
            last=terminated(137, "OOMKilled", "2026-11-02T10:30:00Z"),
        ),
        pod("train-1-m8q4r", "train", "gpu-node-2", terminated=terminated(1, "Error", "2026-11-02T10:41:55Z")),
        pod("sweep-0-z7w1v", "sweep", "gpu-node-3"),
    ]
    events = [
        event(
            "ml",
            "Pod",
            "train-0-xk2p9",
            "BackOff",
            "Back-off restarting failed container trainer in pod train-0-xk2p9_ml",
            "2026-11-02T10:30:10Z",
            host="gpu-node-1",
        ),
        event(
            "ml",
            "Job",
            "train",
            "BackoffLimitExceeded",
            "Job has reached the specified backoff limit",
            "2026-11-02T10:42:00Z",
            component="job-controller",
        ),
        event("ml", "Pod", "unrelated-0", "Pulled", "Successfully pulled image", "2026-11-02T10:10:00Z"),
        event(
            "default",
            "Node",
            "gpu-node-2",
            "NodeHasSufficientMemory",
            "Node gpu-node-2 status is now: NodeHasSufficientMemory",
            "2026-11-02T09:00:00Z",
            component="kubelet",
            host="gpu-node-2",
        ),
        event(
            "default",
            "Node",
            "gpu-node-9",
            "NodeNotReady",
            "Node gpu-node-9 status is now: NodeNotReady",
            "2026-11-02T10:20:00Z",
            component="node-controller",
        ),
    ]
    logs = {
        ("train-0-xk2p9", "trainer", False): "2026-11-02T10:41:00.000000001Z step 200 loss=1.9\n",
        ("train-0-xk2p9", "trainer", True): "2026-11-02T10:29:00.123456789Z step 100 loss=2.3\n",
        ("train-1-m8q4r", "trainer", False): "2026-11-02T10:41:55.000000000Z [rank1]: RuntimeError: NCCL "
        "communicator was aborted on rank 1.\n",
        ("sweep-0-z7w1v", "trainer", False): "2026-11-02T10:05:00.000000000Z waiting for data\n",
    }
    return KubernetesDouble(workloads, pods, events, logs)


def scheduler(cluster, **settings) -> KueueScheduler:
    return KueueScheduler("kueue", {"cluster": "k8s-a", "host": cluster.url, "backoff": 0, **settings})


@pytest.fixture(scope="module")
def engine():
    return Engine(load_rules(ROOT / "rules" / "packs" / "default"))


def test_discovers_failed_and_evicted_workloads_with_their_pods(cluster):
    kueue = scheduler(cluster)
    found, cursor = kueue.discover("2026-11-02T09:00:00Z")
    by_job = {d.attempt.job_id: d for d in found}
    assert sorted(by_job) == ["ml/sweep", "ml/train"]
    train = by_job["ml/train"].attempt
    assert (train.state, train.exit_code, train.nodes) == ("Failed", "137", ("gpu-node-1", "gpu-node-2"))
    assert train.reason == "Failed: Job has reached the specified backoff limit"
    assert (train.start.isoformat(), train.end.isoformat()) == (
        "2026-11-02T10:00:05+00:00",
        "2026-11-02T10:42:00+00:00",
    )
    sweep = by_job["ml/sweep"].attempt
    assert (sweep.state, sweep.attempt, sweep.nodes) == ("Evicted", 1, ("gpu-node-3",))
    assert sweep.reason.startswith("PodsReadyTimeout: Exceeded the PodsReady timeout")
    assert cursor == "2026-11-02T10:42:00Z"
    assert kueue.skipped == ["workload ml/job-gone-3c4d5: no pod of Job gone ran on a node; nodes unknown"]
    assert [d.attempt.job_id for d in kueue.discover(cursor)[0]] == ["ml/train"]  # within the overlap


def test_the_workload_list_is_paged_and_namespaces_can_be_chosen(cluster):
    found, _ = scheduler(cluster, namespaces=["ml", "other"]).discover("2026-11-02T09:00:00Z")
    assert len(found) == 2
    cluster.workloads.extend(copy.deepcopy(cluster.workloads) * 100)  # more than one page of 500
    for index, item in enumerate(cluster.workloads[6:]):
        item["metadata"]["name"] += f"-{index}"
    found, _ = scheduler(cluster).discover("2026-11-02T09:00:00Z")
    assert len(found) == 2 * 101
    assert any("continue=500" in f"continue={r.params.get('continue')}" for r in cluster.requests)


def test_gathers_container_statuses_events_and_current_and_previous_logs(cluster, engine):
    kueue = scheduler(cluster)
    train = next(d for d in kueue.discover("2026-11-02T09:00:00Z")[0] if d.attempt.job_id == "ml/train")
    context = gather(train, kueue)
    assert sorted((s.ref, s.node, s.kind) for s in context.streams) == [
        ("logs/gpu-node-1/train-0-xk2p9.trainer.log", "gpu-node-1", "app"),
        ("logs/gpu-node-1/train-0-xk2p9.trainer.previous.log", "gpu-node-1", "app"),
        ("logs/gpu-node-2/train-1-m8q4r.trainer.log", "gpu-node-2", "app"),
    ]
    flat = {(e.reason, e.node) for e in context.events}
    assert ("OOMKilled", "gpu-node-1") in flat
    assert ("BackOff", "gpu-node-1") in flat
    assert ("BackoffLimitExceeded", None) in flat
    assert ("Finished", None) in flat
    assert not any(e.reason in ("Pulled", "NodeNotReady") for e in context.events)  # other pods, other nodes
    oom = next(e for e in context.events if e.reason == "OOMKilled" and "previous" not in e.message)
    assert oom.message == "container trainer of pod train-0-xk2p9 terminated with exit code 137"
    assert context.reports == ()
    logs = [r.params for r in cluster.requests if r.path == "/api/v1/namespaces/ml/pods/train-0-xk2p9/log"]
    assert [(parse_bool(p["previous"]), parse_bool(p["timestamps"]), p["tailLines"]) for p in logs] == [
        (False, True, "100000"),
        (True, True, "100000"),
    ]
    previous = next(s for s in context.streams if s.name == "train-0-xk2p9.trainer.previous")
    assert previous.opener().read() == b"2026-11-02T10:29:00.123456789Z step 100 loss=2.3\n"
    diagnosis = engine.diagnose(context)
    assert (diagnosis["domain"], diagnosis["subdomain"]) == ("application", "host_oom")
    assert diagnosis["root_cause"]["nodes"] == ["gpu-node-1"]


def test_a_pod_deleted_before_gathering_is_a_missing_source_and_the_diagnosis_still_stands(cluster, engine):
    kueue = scheduler(cluster)
    train = next(d for d in kueue.discover("2026-11-02T09:00:00Z")[0] if d.attempt.job_id == "ml/train")
    cluster.pods[:] = [p for p in cluster.pods if p["metadata"]["name"] != "train-0-xk2p9"]
    stored = DiscoveredAttempt.from_dict(train.to_dict())  # as the pipeline stores and reloads it
    context = gather(stored, kueue)
    missing = [(r.name, r.status) for r in context.reports]
    assert missing == [("train-0-xk2p9.trainer", "missing"), ("train-0-xk2p9.trainer.previous", "missing")]
    assert "pod already deleted" in context.reports[0].detail
    diagnosis = engine.diagnose(context)
    assert diagnosis["subdomain"] == "host_oom"
    assert ("train-0-xk2p9.trainer", "app", "missing") in {
        (s["name"], s["kind"], s["status"]) for s in diagnosis["sources"]
    }


def test_an_eviction_for_pods_ready_timeout_is_diagnosed_as_such(cluster, engine):
    kueue = scheduler(cluster)
    sweep = next(d for d in kueue.discover("2026-11-02T09:00:00Z")[0] if d.attempt.job_id == "ml/sweep")
    diagnosis = engine.diagnose(gather(sweep, kueue))
    assert (diagnosis["domain"], diagnosis["subdomain"]) == ("scheduler", "eviction")


def test_api_errors_are_retried_when_transient_and_permanent_otherwise(cluster):
    cluster.faults = [(503, {}, {"kind": "Status", "code": 503, "message": "etcd leader changed"})]
    found, _ = scheduler(cluster).discover("2026-11-02T09:00:00Z")
    assert len(found) == 2
    cluster.faults = [
        (
            403,
            {},
            {
                "kind": "Status",
                "apiVersion": "v1",
                "status": "Failure",
                "reason": "Forbidden",
                "message": 'workloads.kueue.x-k8s.io is forbidden: User "faultline" cannot list',
                "code": 403,
            },
        )
    ]
    with pytest.raises(ConnectorError, match="HTTP 403 workloads.kueue.x-k8s.io is forbidden") as caught:
        scheduler(cluster).discover(None)
    assert caught.value.permanent
    cluster.faults = [(500, {}, "boom")] * 2
    with pytest.raises(ConnectorError, match=r"HTTP 500 boom \(after 2 tries\)") as caught:
        scheduler(cluster, retries=1).discover(None)
    assert not caught.value.permanent


def test_events_that_cannot_be_listed_are_a_reported_gap(cluster):
    kueue = scheduler(cluster, retries=0)
    sweep = next(d for d in kueue.discover("2026-11-02T09:00:00Z")[0] if d.attempt.job_id == "ml/sweep")
    real = cluster.answer
    cluster.respond = lambda r: (500, {}, "down") if r.path.endswith("/events") else real(r)
    context = gather(sweep, kueue)
    assert [(r.name, r.status) for r in context.reports] == [("events", "error")]
    assert [e.reason for e in context.events] == ["EvictedDueToPodsReadyTimeout"]


def test_exactly_one_way_to_reach_the_api():
    with pytest.raises(ConnectorError, match="exactly one must be given"):
        KueueScheduler("kueue", {"cluster": "c"})
    with pytest.raises(ConnectorError, match="cannot load the Kubernetes configuration"):
        KueueScheduler("kueue", {"cluster": "c", "kubeconfig": "/nonexistent/kubeconfig"})
