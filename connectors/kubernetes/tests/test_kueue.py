"""The Kueue/Kubernetes connector against a local double of the Kubernetes API (``kubernetes_double``,
started by the root conftest's ``kubernetes_api`` fixture)."""

from __future__ import annotations

import copy

import pytest

from connectors.base import ConnectorError, DiscoveredAttempt
from connectors.gather import gather
from connectors.kubernetes.kueue import KueueScheduler
from connectors.kubernetes.tests.kubernetes_double import parse_bool


def scheduler(kubernetes_api, **settings) -> KueueScheduler:
    return KueueScheduler("kueue", {"cluster": "k8s-a", "host": kubernetes_api.url, "backoff": 0, **settings})


def test_discovers_failed_and_evicted_workloads_with_their_pods(kubernetes_api):
    kueue = scheduler(kubernetes_api)
    found, cursor = kueue.discover("2026-11-02T09:00:00Z")
    by_job = {d.attempt.job_id: d for d in found}
    assert sorted(by_job) == ["ml/sweep", "ml/train"]
    train = by_job["ml/train"].attempt
    assert (train.state, train.exit_code, train.nodes) == ("Failed", "137", ("gpu-node-1", "gpu-node-2"))
    assert train.reason == "Failed: Job has reached the specified backoff limit"
    # the container image, and the pod spec's literal NCCL_/TORCH_/CUDA_ variables (never another, never a reference)
    assert (train.image, train.environment) == ("train:1", {"NCCL_DEBUG": "INFO", "NCCL_IB_HCA": "mlx5_0"})
    assert DiscoveredAttempt.from_dict(by_job["ml/train"].to_dict()).attempt == train  # as the pipeline stores it
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


def test_the_workload_list_is_paged_and_namespaces_can_be_chosen(kubernetes_api):
    found, _ = scheduler(kubernetes_api, namespaces=["ml", "other"]).discover("2026-11-02T09:00:00Z")
    assert len(found) == 2
    kubernetes_api.workloads.extend(copy.deepcopy(kubernetes_api.workloads) * 100)  # more than one page of 500
    for index, item in enumerate(kubernetes_api.workloads[6:]):
        item["metadata"]["name"] += f"-{index}"
    found, _ = scheduler(kubernetes_api).discover("2026-11-02T09:00:00Z")
    assert len(found) == 2 * 101
    assert any("continue=500" in f"continue={r.params.get('continue')}" for r in kubernetes_api.requests)


def test_gathers_container_statuses_events_and_current_and_previous_logs(kubernetes_api, engine):
    kueue = scheduler(kubernetes_api)
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
    logs = [r.params for r in kubernetes_api.requests if r.path == "/api/v1/namespaces/ml/pods/train-0-xk2p9/log"]
    assert [(parse_bool(p["previous"]), parse_bool(p["timestamps"]), p["tailLines"]) for p in logs] == [
        (False, True, "100000"),
        (True, True, "100000"),
    ]
    previous = next(s for s in context.streams if s.name == "train-0-xk2p9.trainer.previous")
    assert previous.opener().read() == b"2026-11-02T10:29:00.123456789Z step 100 loss=2.3\n"
    diagnosis = engine.diagnose(context)
    assert (diagnosis["domain"], diagnosis["subdomain"]) == ("application", "host_oom")
    assert diagnosis["root_cause"]["nodes"] == ["gpu-node-1"]


def test_a_pod_deleted_before_gathering_is_a_missing_source_and_the_diagnosis_still_stands(kubernetes_api, engine):
    kueue = scheduler(kubernetes_api)
    train = next(d for d in kueue.discover("2026-11-02T09:00:00Z")[0] if d.attempt.job_id == "ml/train")
    kubernetes_api.pods[:] = [p for p in kubernetes_api.pods if p["metadata"]["name"] != "train-0-xk2p9"]
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


def test_an_eviction_for_pods_ready_timeout_is_diagnosed_as_such(kubernetes_api, engine):
    kueue = scheduler(kubernetes_api)
    sweep = next(d for d in kueue.discover("2026-11-02T09:00:00Z")[0] if d.attempt.job_id == "ml/sweep")
    diagnosis = engine.diagnose(gather(sweep, kueue))
    assert (diagnosis["domain"], diagnosis["subdomain"]) == ("scheduler", "eviction")


def test_api_errors_are_retried_when_transient_and_permanent_otherwise(kubernetes_api):
    kubernetes_api.faults = [(503, {}, {"kind": "Status", "code": 503, "message": "etcd leader changed"})]
    found, _ = scheduler(kubernetes_api).discover("2026-11-02T09:00:00Z")
    assert len(found) == 2
    kubernetes_api.faults = [
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
        scheduler(kubernetes_api).discover(None)
    assert caught.value.permanent
    kubernetes_api.faults = [(500, {}, "boom")] * 2
    with pytest.raises(ConnectorError, match=r"HTTP 500 boom \(after 2 tries\)") as caught:
        scheduler(kubernetes_api, retries=1).discover(None)
    assert not caught.value.permanent


def test_events_that_cannot_be_listed_are_a_reported_gap(kubernetes_api):
    kueue = scheduler(kubernetes_api, retries=0)
    sweep = next(d for d in kueue.discover("2026-11-02T09:00:00Z")[0] if d.attempt.job_id == "ml/sweep")
    real = kubernetes_api.answer
    kubernetes_api.respond = lambda r: (500, {}, "down") if r.path.endswith("/events") else real(r)
    context = gather(sweep, kueue)
    assert [(r.name, r.status) for r in context.reports] == [("events", "error")]
    assert [e.reason for e in context.events] == ["EvictedDueToPodsReadyTimeout"]


def test_exactly_one_way_to_reach_the_api():
    with pytest.raises(ConnectorError, match="exactly one must be given"):
        KueueScheduler("kueue", {"cluster": "c"})
    with pytest.raises(ConnectorError, match="cannot load the Kubernetes configuration"):
        KueueScheduler("kueue", {"cluster": "c", "kubeconfig": "/nonexistent/kubeconfig"})
