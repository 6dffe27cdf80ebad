"""A Kubernetes API double serving Kueue Workloads, Pods, pod logs, Events and nodes' log files in the API's shapes.

Paths, parameters and bodies follow the Kubernetes API reference (``PodList``, ``EventList``,
``GET /api/v1/namespaces/{ns}/pods/{name}/log`` with ``container``, ``previous``, ``timestamps``,
``tailLines``; list ``limit``/``continue``; a ``Status`` body with ``code: 404`` for a deleted pod)
and Kueue's (``kueue.x-k8s.io/v1beta1`` ``WorkloadList``). ``GET /api/v1/nodes/{node}/proxy/logs/{path}`` answers as
the API server's proxy to the node's kubelet does: the kubelet serves the node's ``/var/log`` with Go's
``http.FileServer`` (kubelet.go: ``http.StripPrefix("/logs/", http.FileServer(http.Dir(nodeLogDir)))``), so a
folder is an HTML listing (net/http's ``dirList``), a folder without its trailing slash a 301 to it, a missing file
``404 page not found`` as text; ``node_files`` holds each node's files by their path under ``/var/log``.
``faults`` holds responses to give instead of the next ones. ``kueue_cluster()`` is the double of the tests: a
namespace of Kueue workloads (failed, evicted, succeeded, running, never started, long ago) with their pods, logs
and events.
"""

from __future__ import annotations

import html
import re
from urllib.parse import quote, unquote

from connectors.tests.http_double import HttpDouble, Request

WORKLOADS = re.compile(r"^/apis/kueue\.x-k8s\.io/v1beta1(?:/namespaces/([^/]+))?/workloads$")
PODS = re.compile(r"^/api/v1/namespaces/([^/]+)/pods$")
LOG = re.compile(r"^/api/v1/namespaces/([^/]+)/pods/([^/]+)/log$")
EVENTS = re.compile(r"^/api/v1/namespaces/([^/]+)/events$")
NODE_LOGS = re.compile(r"^/api/v1/nodes/([^/]+)/proxy/logs/(.*)$")
NODE = re.compile(r"^/api/v1/nodes/([^/]+)$")
MERGE_PATCHES = ("application/merge-patch+json", "application/strategic-merge-patch+json")


def not_found(kind: str, name: str) -> tuple[int, dict, dict]:
    return 404, {}, {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                     "message": f'{kind} "{name}" not found', "reason": "NotFound",
                     "details": {"name": name, "kind": kind}, "code": 404}  # fmt: skip


class KubernetesDouble(HttpDouble):
    def __init__(self, workloads: list[dict], pods: list[dict], events: list[dict], logs: dict):
        self.workloads, self.pods, self.events, self.logs = workloads, pods, events, logs
        self.node_files: dict[str, dict[str, bytes]] = {}  # node -> path under /var/log -> content
        self.nodes = {name: node_object(name) for name in sorted({p["spec"]["nodeName"] for p in pods
                                                                  if p["spec"].get("nodeName")})}  # fmt: skip
        self.faults: list[tuple[int, dict, object]] = []
        super().__init__(self.answer)

    def answer(self, request: Request):
        if self.faults:
            return self.faults.pop(0)
        path, params = request.path, request.params
        if match := WORKLOADS.match(path):
            items = [w for w in self.workloads if match.group(1) in (None, w["metadata"]["namespace"])]
            return self.page("kueue.x-k8s.io/v1beta1", "WorkloadList", items, params)
        if match := PODS.match(path):
            items = [p for p in self.pods if p["metadata"]["namespace"] == match.group(1)
                     and _selected(p["metadata"].get("labels", {}), params.get("labelSelector", ""))]  # fmt: skip
            return self.page("v1", "PodList", items, params)
        if match := LOG.match(path):
            namespace, name = match.groups()
            if not any(p["metadata"]["name"] == name and p["metadata"]["namespace"] == namespace for p in self.pods):
                return not_found("pods", name)
            key = (name, params.get("container"), parse_bool(params.get("previous", "false")))
            if key not in self.logs:
                message = f'previous terminated container "{key[1]}" in pod "{name}" not found'
                return 400, {}, {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                                 "message": message, "reason": "BadRequest", "code": 400}  # fmt: skip
            lines = self.logs[key].splitlines(keepends=True)
            if not parse_bool(params.get("timestamps", "false")):
                lines = [line.split(" ", 1)[1] for line in lines]
            if "tailLines" in params:
                lines = lines[-int(params["tailLines"]) :]
            return 200, {"Content-Type": "text/plain"}, "".join(lines).encode()
        if match := NODE.match(path):
            return self.node(request, unquote(match.group(1)))
        if match := NODE_LOGS.match(path):
            return self.node_log(match.group(1), unquote(match.group(2)))
        if match := EVENTS.match(path):
            items = [e for e in self.events if e["metadata"]["namespace"] == match.group(1)
                     and _field_selected(e, params.get("fieldSelector", ""))]  # fmt: skip
            return self.page("v1", "EventList", items, params)
        return 404, {}, {"kind": "Status", "apiVersion": "v1", "status": "Failure", "message": "the server could "
                         "not find the requested resource", "reason": "NotFound", "code": 404}  # fmt: skip

    def node(self, request: Request, name: str):
        """``GET`` or ``PATCH /api/v1/nodes/{name}``: a merge patch (JSON merge semantics: ``null`` removes a key, which
        is what a strategic merge patch does to these fields); a JSON Patch of an object is refused as the API server
        refuses it."""
        if name not in self.nodes:
            return not_found("nodes", name)
        if request.method == "PATCH":
            kind = request.headers.get("Content-Type", "").split(";")[0]
            if kind not in MERGE_PATCHES:
                return 415, {}, {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                                 "message": f"the body of the request was in an unknown format - accepted media types "
                                            f"include: {', '.join(MERGE_PATCHES)}", "reason": "UnsupportedMediaType",
                                 "code": 415}  # fmt: skip
            self.nodes[name] = merge(self.nodes[name], request.json())
            self.nodes[name]["metadata"]["resourceVersion"] = str(
                int(self.nodes[name]["metadata"]["resourceVersion"]) + 1
            )
        return 200, {}, self.nodes[name]

    def node_log(self, node: str, path: str):
        if node not in self.node_files and node not in {p["spec"].get("nodeName") for p in self.pods}:
            return not_found("nodes", node)
        files = self.node_files.get(node, {})
        folder = path.rstrip("/")
        inside = {name[len(folder) + 1 :] if folder else name for name in files if name.startswith(f"{folder}/")}
        if path in files:
            data = files[path]
            kind = "text/plain; charset=utf-8" if data.lstrip()[:1] == b"{" else "application/octet-stream"
            return 200, {"Content-Type": kind, "Accept-Ranges": "bytes"}, data
        if not inside and folder:
            return 404, {"Content-Type": "text/plain; charset=utf-8"}, b"404 page not found\n"
        if not path.endswith("/") and path:
            return 301, {"Location": f"{folder.rsplit('/', 1)[-1]}/"}, b""
        entries = sorted({name.split("/", 1)[0] + ("/" if "/" in name else "") for name in inside})
        links = "".join(f'<a href="{_href(entry)}">{html.escape(entry, quote=False)}</a>\n' for entry in entries)
        body = f'<!doctype html>\n<meta name="viewport" content="width=device-width">\n<pre>\n{links}</pre>\n'
        return 200, {"Content-Type": "text/html; charset=utf-8"}, body.encode()

    def page(self, api_version: str, kind: str, items: list[dict], params: dict):
        offset = int(params.get("continue") or 0)
        limit = int(params.get("limit") or 0) or len(items)
        chunk, rest = items[offset : offset + limit], offset + limit < len(items)
        metadata = {"resourceVersion": "4711", **({"continue": str(offset + limit)} if rest else {})}
        return 200, {}, {"apiVersion": api_version, "kind": kind, "metadata": metadata, "items": chunk}


def node_object(name: str) -> dict:
    return {
        "kind": "Node",
        "apiVersion": "v1",
        "metadata": {"name": name, "uid": f"uid-{name}", "resourceVersion": "100",
                     "labels": {"kubernetes.io/hostname": name}, "annotations": {}},
        "spec": {"podCIDR": "10.244.1.0/24"},
        "status": {"conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}]},
    }  # fmt: skip


def merge(target, patch):
    """RFC 7386 JSON merge patch."""
    if not isinstance(patch, dict):
        return patch
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge(result.get(key), value)
    return result


def parse_bool(value: str) -> bool:
    """A boolean query parameter as the API server reads it (Go's strconv.ParseBool)."""
    if value in ("1", "t", "T", "TRUE", "true", "True"):
        return True
    if value in ("0", "f", "F", "FALSE", "false", "False"):
        return False
    raise ValueError(f"invalid boolean {value!r}")


def _href(name: str) -> str:
    """A name as Go's ``url.URL{Path: name}.String()`` writes it: escaped as a path, ``./`` before a first segment
    with a colon (so that it is not read as a scheme)."""
    escaped = quote(name, safe="$&+,/:;=@")
    return f"./{escaped}" if ":" in name.split("/", 1)[0] else escaped


def _selected(labels: dict, selector: str) -> bool:
    for term in filter(None, selector.split(",")):
        key, _, value = term.partition("=")
        if labels.get(key) != value:
            return False
    return True


def _field_selected(event: dict, selector: str) -> bool:
    for term in filter(None, selector.split(",")):
        key, _, value = term.partition("=")
        if key == "involvedObject.kind" and event["involvedObject"].get("kind") != value:
            return False
    return True


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
            "containers": [
                {
                    "name": "trainer",
                    "image": "train:1",
                    "env": [  # core/v1 EnvVar: a value, or a reference resolved by the kubelet
                        {"name": "NCCL_IB_HCA", "value": "mlx5_0"},
                        {"name": "NCCL_DEBUG", "value": "INFO"},
                        {"name": "HF_TOKEN", "value": "hf_secret"},
                        {"name": "NCCL_SOCKET_IFNAME", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
                    ],
                }
            ],
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


def kueue_cluster() -> KubernetesDouble:
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
