"""Draining a Kubernetes node is a cordon through the API (``spec.unschedulable``, the reason in an annotation), and
resuming is the uncordon: against the Kubernetes API double, which answers PATCH as the API server does."""

import pytest

from connectors.base import ConnectorError, NodeControl
from connectors.kubernetes.kueue import DRAIN_REASON, KueueScheduler


def scheduler(kubernetes_api) -> KueueScheduler:
    return KueueScheduler("kueue", {"cluster": "k8s-a", "host": kubernetes_api.url, "backoff": 0})


def test_a_drain_cordons_the_node_and_a_resume_uncordons_it(kubernetes_api):
    kueue = scheduler(kubernetes_api)
    assert isinstance(kueue, NodeControl)
    node = sorted(kubernetes_api.nodes)[0]

    answer = kueue.drain_node(node, "faultline: xid 79")
    assert answer == f"unschedulable=true {DRAIN_REASON}=faultline: xid 79"
    patch = kubernetes_api.requests[-1]
    assert (patch.method, patch.path) == ("PATCH", f"/api/v1/nodes/{node}")
    assert patch.headers["Content-Type"] == "application/strategic-merge-patch+json"
    assert patch.json() == {
        "spec": {"unschedulable": True},
        "metadata": {"annotations": {DRAIN_REASON: "faultline: xid 79"}},
    }
    assert kubernetes_api.nodes[node]["spec"]["unschedulable"] is True
    assert kubernetes_api.nodes[node]["spec"]["podCIDR"] == "10.244.1.0/24"  # a merge, not a replacement

    assert kueue.resume_node(node) == "unschedulable=false"
    assert kubernetes_api.nodes[node]["spec"]["unschedulable"] is False
    assert DRAIN_REASON not in kubernetes_api.nodes[node]["metadata"]["annotations"]


def test_an_unknown_node_is_a_permanent_error(kubernetes_api):
    with pytest.raises(ConnectorError, match="not found") as raised:
        scheduler(kubernetes_api).drain_node("no-such-node", "x")
    assert raised.value.permanent
