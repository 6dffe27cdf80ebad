"""A Kubernetes API double serving Kueue Workloads, Pods, pod logs and Events in the API's shapes.

Paths, parameters and bodies follow the Kubernetes API reference (``PodList``, ``EventList``,
``GET /api/v1/namespaces/{ns}/pods/{name}/log`` with ``container``, ``previous``, ``timestamps``,
``tailLines``; list ``limit``/``continue``; a ``Status`` body with ``code: 404`` for a deleted pod)
and Kueue's (``kueue.x-k8s.io/v1beta1`` ``WorkloadList``). ``faults`` holds responses to give instead of
the next ones.
"""

from __future__ import annotations

import re

from connectors.tests.http_double import HttpDouble, Request

WORKLOADS = re.compile(r"^/apis/kueue\.x-k8s\.io/v1beta1(?:/namespaces/([^/]+))?/workloads$")
PODS = re.compile(r"^/api/v1/namespaces/([^/]+)/pods$")
LOG = re.compile(r"^/api/v1/namespaces/([^/]+)/pods/([^/]+)/log$")
EVENTS = re.compile(r"^/api/v1/namespaces/([^/]+)/events$")


def not_found(kind: str, name: str) -> tuple[int, dict, dict]:
    return 404, {}, {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                     "message": f'{kind} "{name}" not found', "reason": "NotFound",
                     "details": {"name": name, "kind": kind}, "code": 404}  # fmt: skip


class KubernetesDouble(HttpDouble):
    def __init__(self, workloads: list[dict], pods: list[dict], events: list[dict], logs: dict):
        self.workloads, self.pods, self.events, self.logs = workloads, pods, events, logs
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
        if match := EVENTS.match(path):
            items = [e for e in self.events if e["metadata"]["namespace"] == match.group(1)
                     and _field_selected(e, params.get("fieldSelector", ""))]  # fmt: skip
            return self.page("v1", "EventList", items, params)
        return 404, {}, {"kind": "Status", "apiVersion": "v1", "status": "Failure", "message": "the server could "
                         "not find the requested resource", "reason": "NotFound", "code": 404}  # fmt: skip

    def page(self, api_version: str, kind: str, items: list[dict], params: dict):
        offset = int(params.get("continue") or 0)
        limit = int(params.get("limit") or 0) or len(items)
        chunk, rest = items[offset : offset + limit], offset + limit < len(items)
        metadata = {"resourceVersion": "4711", **({"continue": str(offset + limit)} if rest else {})}
        return 200, {}, {"apiVersion": api_version, "kind": kind, "metadata": metadata, "items": chunk}


def parse_bool(value: str) -> bool:
    """A boolean query parameter as the API server reads it (Go's strconv.ParseBool)."""
    if value in ("1", "t", "T", "TRUE", "true", "True"):
        return True
    if value in ("0", "f", "F", "FALSE", "false", "False"):
        return False
    raise ValueError(f"invalid boolean {value!r}")


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
