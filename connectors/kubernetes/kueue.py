"""The Kueue scheduler connector: failed and evicted Workloads, their pods, events and container logs.

A Workload (``kueue.x-k8s.io/v1beta1``) is a failed attempt when its ``Finished`` condition is True
with a reason other than ``Succeeded``, or when its ``Evicted`` condition is True (preempted, pods not
ready in time, admission check rejected, deactivated). Its pods are found from its owner (a batch Job,
a JobSet, a Kubeflow job: ``pod_selectors``); they give the attempt's nodes and start, and their
container statuses (OOMKilled, exit codes, the previous termination) become events. Discovery keeps
a snapshot of those, so an attempt is still diagnosable when its pods are deleted before gathering;
a pod already deleted then is a ``missing`` source, not an error.

Settings: those of ``KubernetesApi`` (``kubeconfig``/``in_cluster``/``host``, ``timeout``, ...), and
``cluster`` (required), ``namespaces`` (default: all), ``lookback_seconds`` (first poll, default one
day), ``overlap_seconds`` (default 300), ``pod_selectors`` (owner kind -> label selector template with
``{name}``, added to ``POD_SELECTORS``), ``tail_lines`` (lines of each container log, default 100,000),
``timezone`` (default UTC), ``flight_recorder_path`` (a folder under the nodes' ``/var/log`` where the job's PyTorch
Flight Recorder dumps are, a hostPath volume; ``{namespace}``, ``{owner}``, ``{workload}``, ``{pod}``), read through
the API server's proxy to each node's kubelet: the ranks whose dumps a node's folder holds ran on that node.

Draining a node (the hand-offs) cordons it: ``spec.unschedulable`` through the API, with the reason in the node's
``faultline.dev/drain-reason`` annotation; resuming uncordons it and removes the annotation. Running pods stay.

Events are flattened to the bundle's events format (time, node, source, reason, message). Workload
conditions that are True become events too: ``Evicted`` as ``EvictedDueTo<reason>`` (Kueue's own
event reason), the others under their type.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from urllib.parse import unquote

from connectors.base import ConnectorError, DiscoveredAttempt, record_time
from connectors.kubernetes.api import KubernetesApi, NotFound
from connectors.settings_reader import Settings
from connectors.trace_files import DumpFiles, check_template, fill
from engine.bundle import rfc3339
from engine.context import (
    ENVIRONMENT_PREFIXES,
    Attempt,
    AttemptContext,
    LogStream,
    SchedulerEvent,
    SourceReport,
    TraceFile,
)
from engine.flight_recorder.unpickle import MAX_BYTES

GROUP, VERSION, PLURAL = "kueue.x-k8s.io", "v1beta1", "workloads"
DRAIN_REASON = "faultline.dev/drain-reason"  # the annotation a cordon leaves on the node
NODE_LOGS = "/var/log/"  # the folder a kubelet serves at /logs/
PLACEHOLDERS = frozenset({"namespace", "owner", "workload", "pod"})
LISTED = re.compile(r'<a href="([^"]*)">')  # a link of Go's http.FileServer folder listing
POD_SELECTORS = {
    "Job": "batch.kubernetes.io/job-name={name}",
    "JobSet": "jobset.sigs.k8s.io/jobset-name={name}",
    "PyTorchJob": "training.kubeflow.org/job-name={name}",
    "MPIJob": "training.kubeflow.org/job-name={name}",
    "TFJob": "training.kubeflow.org/job-name={name}",
    "RayJob": "ray.io/cluster={name}",
}


class KueueScheduler:
    def __init__(self, name: str, settings: Mapping):
        self.name = name
        reader = Settings(name, settings)
        self.api = KubernetesApi(reader)
        self.cluster = reader.text("cluster", required=True)
        self.namespaces = reader.texts("namespaces")
        self.lookback = timedelta(seconds=reader.number("lookback_seconds", 86400.0))
        self.overlap = timedelta(seconds=reader.number("overlap_seconds", 300.0))
        self.pod_selectors = {**POD_SELECTORS, **reader.mapping("pod_selectors")}
        self.tail_lines = reader.integer("tail_lines", 100_000, minimum=1)
        self.timezone = reader.text("timezone", "UTC")
        self.flight_recorder_path = check_template(reader, "flight_recorder_path", PLACEHOLDERS, under=NODE_LOGS)
        reader.finish()
        self.skipped: list[str] = []

    # -- node control (the hand-offs' drains) --

    def drain_node(self, node: str, reason: str) -> str:
        """Cordon the node: no new pod is scheduled on it; its running pods stay."""
        return self.cordon(node, unschedulable=True, reason=reason)

    def resume_node(self, node: str) -> str:
        return self.cordon(node, unschedulable=False, reason=None)

    def cordon(self, node: str, *, unschedulable: bool, reason: str | None) -> str:
        """Set ``spec.unschedulable`` and the reason annotation (None removes it); the state the API answers."""
        patch = {"spec": {"unschedulable": unschedulable}, "metadata": {"annotations": {DRAIN_REASON: reason}}}
        document = self.api.json(f"node {node}", self.api.patch_node, node, patch)
        shown = "true" if (document.get("spec") or {}).get("unschedulable") else "false"
        annotation = ((document.get("metadata") or {}).get("annotations") or {}).get(DRAIN_REASON)
        return f"unschedulable={shown}" + (f" {DRAIN_REASON}={annotation}" if annotation else "")

    # -- discovery --

    def discover(self, cursor: str | None) -> tuple[list[DiscoveredAttempt], str | None]:
        since = record_time(cursor, "kueue cursor") - self.overlap if cursor else datetime.now(UTC) - self.lookback
        self.skipped = []
        found, latest = [], record_time(cursor, "kueue cursor") if cursor else None
        for workload in self.workloads():
            ending = _ending(workload)
            if ending is None:
                continue
            state, condition = ending
            meta = workload.get("metadata") or {}
            where = f"workload {meta.get('namespace')}/{meta.get('name')}"
            try:
                end = record_time(condition.get("lastTransitionTime"), f"{where}: {condition.get('type')}")
            except ConnectorError as exc:
                self.skipped.append(str(exc))
                continue
            latest = max(latest, end) if latest else end
            if end < since:
                continue
            try:
                found.append(self.discovered(workload, state, condition, end))
            except NotFound as exc:
                self.skipped.append(f"{where}: {exc}")
            except ConnectorError as exc:
                if not exc.permanent:
                    raise
                self.skipped.append(f"{where}: {exc}")
        found.sort(key=lambda d: (d.attempt.end, d.attempt.job_id))
        return found, rfc3339(latest) if latest else (cursor or rfc3339(since))

    def workloads(self) -> list[dict]:
        if not self.namespaces:
            return self.api.items("list workloads", self.api.custom.list_cluster_custom_object, GROUP, VERSION, PLURAL)
        items = []
        for namespace in self.namespaces:
            items += self.api.items(f"list workloads in {namespace}", self.api.custom.list_namespaced_custom_object,
                                    GROUP, VERSION, namespace, PLURAL)  # fmt: skip
        return items

    def discovered(self, workload: dict, state: str, condition: dict, end: datetime) -> DiscoveredAttempt:
        meta, status = workload.get("metadata") or {}, workload.get("status") or {}
        namespace, name = meta.get("namespace", "default"), meta.get("name", "")
        owner = next(iter(meta.get("ownerReferences") or []), {})
        pods = self.pods(namespace, owner)
        where = f"workload {namespace}/{name}"
        nodes = tuple(dict.fromkeys(p["node"] for p in pods if p["node"]))
        if not nodes:
            raise ConnectorError(f"no pod of {owner.get('kind')} {owner.get('name')} ran on a node; "
                                 "nodes unknown", permanent=True)  # fmt: skip
        starts = [record_time(p["start"], f"{where}: pod {p['name']} startTime") for p in pods if p["start"]]
        start = min([*starts, end])
        reason = condition.get("reason") or ""
        if condition.get("message"):
            reason = f"{reason}: {condition['message']}" if reason else condition["message"]
        exit_codes = [e["exit_code"] for p in pods for e in p["terminations"] if e["exit_code"] not in ("", "0")]
        attempt = Attempt(
            cluster=self.cluster,
            scheduler="kueue",
            job_id=f"{namespace}/{owner.get('name') or name}",
            attempt=int((status.get("requeueState") or {}).get("count") or 0),
            nodes=nodes,
            start=start,
            end=end,
            state=state,
            name=name,
            user="",
            exit_code=exit_codes[0] if exit_codes else "",
            reason=reason,
            timezone=self.timezone,
            image=", ".join(dict.fromkeys(p["image"] for p in pods if p["image"])),
            environment={name: value for p in pods for name, value in sorted(p["environment"].items())},
        )
        events = [*_condition_events(workload), *(e for p in pods for e in p["events"])]
        extra = {"namespace": namespace, "workload": name, "owner": owner.get("name", ""),
                 "owner_kind": owner.get("kind", ""), "pods": pods, "events": events}  # fmt: skip
        return DiscoveredAttempt(attempt=attempt, extra=extra)

    def pods(self, namespace: str, owner: dict) -> list[dict]:
        """The owner's pods: name, node, start, containers, terminations and their status events."""
        template = self.pod_selectors.get(owner.get("kind", ""))
        if not template or not owner.get("name"):
            raise ConnectorError(f"no pod selector for owner kind {owner.get('kind')!r} (setting pod_selectors)",
                                 permanent=True)  # fmt: skip
        selector = template.format(name=owner["name"])
        items = self.api.items(f"list pods {selector} in {namespace}", self.api.core.list_namespaced_pod, namespace,
                               label_selector=selector)  # fmt: skip
        return sorted((_pod_summary(item) for item in items), key=lambda p: p["name"])

    # -- one attempt --

    def attempt_context(self, discovered: DiscoveredAttempt) -> AttemptContext:
        extra = discovered.extra
        namespace, pods = extra["namespace"], extra.get("pods", [])
        streams, reports = [], []
        events = [_event(e, f"events/kueue.json:{i + 1}") for i, e in enumerate(extra.get("events", []))]
        for pod in pods:
            for container in pod["containers"]:
                for previous in (False, True):
                    if previous and not container["restarted"]:
                        continue
                    stream, report = self.container_log(namespace, pod, container["name"], previous)
                    streams += [stream] if stream else []
                    reports += [report] if report else []
        try:
            events += self.api_events(namespace, extra, discovered.attempt.nodes, {p["name"]: p["node"] for p in pods})
        except ConnectorError as exc:
            reports.append(SourceReport("events", "events", "error", str(exc)))
        attempt, traces = discovered.attempt, ()
        if self.flight_recorder_path:
            dumps, folders = self.flight_recorder_dumps(discovered)
            attempt, traces = dumps.attempt(attempt), dumps.traces()
            reports += dumps.reports(folders)
        return AttemptContext(attempt=attempt, streams=tuple(streams), events=tuple(events), reports=tuple(reports),
                              flight_recorder=traces)  # fmt: skip

    def flight_recorder_dumps(self, discovered: DiscoveredAttempt) -> tuple[DumpFiles, list[str]]:
        """The dumps in the job's folder on each of its nodes (on each pod's node with ``{pod}``), read through the
        API server's proxy to the kubelet, which serves the node's /var/log; and the folders looked in."""
        extra = discovered.extra
        values = {"namespace": extra["namespace"], "owner": extra.get("owner", ""), "workload": extra["workload"]}
        if "{pod}" in self.flight_recorder_path:
            places = [(p["node"], fill(self.flight_recorder_path, pod=p["name"], **values))
                      for p in extra.get("pods", []) if p["node"]]  # fmt: skip
        else:
            places = [(node, fill(self.flight_recorder_path, **values)) for node in discovered.attempt.nodes]
        dumps = DumpFiles(self.name)
        for node, folder in places:
            relative = folder.removeprefix(NODE_LOGS).strip("/")
            try:
                listing = self.api.call(f"list {folder} on node {node}", self.api.node_log_file, node, relative + "/")
            except NotFound:
                continue  # nothing dumped on this node
            except ConnectorError as exc:
                dumps.problems.append(str(exc))
                continue
            for name in _listed_files(listing):
                where = f"{node}:{folder.rstrip('/')}/{name}"
                try:
                    data = self.api.call(f"read {where}", self.api.node_log_file, node, f"{relative}/{name}",
                                         max_bytes=MAX_BYTES)  # fmt: skip
                except ConnectorError as exc:
                    dumps.problems.append(str(exc))
                    continue
                dumps.add(name, len(data), node, where, lambda ref, data=data: TraceFile.from_bytes(ref, data))
        return dumps, [f"{node}:{folder}" for node, folder in places]

    def container_log(self, namespace: str, pod: dict, container: str, previous: bool):
        name = f"{pod['name']}.{container}" + (".previous" if previous else "")
        what = f"log of {namespace}/{pod['name']} container {container}" + (" (previous)" if previous else "")
        try:
            data = self.api.call(what, self.api.core.read_namespaced_pod_log, pod["name"], namespace,
                                 container=container, previous=previous, timestamps=True,
                                 tail_lines=self.tail_lines)  # fmt: skip
        except NotFound:
            return None, SourceReport(name, "app", "missing", f"{self.name}: {what}: pod already deleted")
        except ConnectorError as exc:
            return None, SourceReport(name, "app", "error", str(exc))
        node = pod["node"] or None
        ref = f"logs/{node}/{name}.log" if node else f"logs/{name}.log"
        return LogStream.from_bytes(ref, name, node, data), None

    def api_events(self, namespace: str, extra: Mapping, nodes: tuple[str, ...], pod_nodes: dict) -> list:
        """Events of the workload, its owner and pods, and of its nodes, flattened."""
        involved = {extra["workload"], extra.get("owner", ""), *pod_nodes}
        items = [
            item
            for item in self.api.items(f"list events in {namespace}", self.api.core.list_namespaced_event, namespace)
            if (item.get("involvedObject") or {}).get("name") in involved
        ]
        node_events = self.api.items("list node events", self.api.core.list_namespaced_event, "default",
                                     field_selector="involvedObject.kind=Node")  # fmt: skip
        items += [e for e in node_events if (e.get("involvedObject") or {}).get("name") in nodes]
        flat = [_flatten_event(item, pod_nodes) for item in items]
        flat.sort(key=lambda e: (e["time"] or "", e["reason"], e["message"]))
        return [_event(e, f"events/kubernetes.json:{i + 1}") for i, e in enumerate(flat)]


def _listed_files(listing: bytes) -> list[str]:
    """The file names of a folder listing as Go's http.FileServer writes it (``<a href="rank_0">rank_0</a>``;
    a subfolder ends in ``/``; a name with a ``:`` is written ``./name``)."""
    text = listing.decode("utf-8", "replace")
    names = (unquote(href).removeprefix("./") for href in LISTED.findall(text))
    return sorted(name for name in names if name and "/" not in name)


def _ending(workload: dict) -> tuple[str, dict] | None:
    conditions = {
        c.get("type"): c for c in (workload.get("status") or {}).get("conditions") or [] if isinstance(c, dict)
    }
    finished = conditions.get("Finished")
    if finished and finished.get("status") == "True" and finished.get("reason") != "Succeeded":
        return "Failed", finished
    evicted = conditions.get("Evicted")
    if evicted and evicted.get("status") == "True":
        return "Evicted", evicted
    return None


def _condition_events(workload: dict) -> list[dict]:
    events = []
    for condition in (workload.get("status") or {}).get("conditions") or []:
        if not isinstance(condition, dict) or condition.get("status") != "True":
            continue
        kind, reason = condition.get("type", ""), condition.get("reason", "")
        label = f"EvictedDueTo{reason}" if kind == "Evicted" else kind
        message = condition.get("message", "")
        events.append({"time": condition.get("lastTransitionTime"), "node": None, "source": "kueue",
                       "reason": label, "message": f"{message} (reason {reason})" if reason else message})  # fmt: skip
    return events


def _pod_summary(pod: dict) -> dict:
    meta, spec, status = pod.get("metadata") or {}, pod.get("spec") or {}, pod.get("status") or {}
    name, node = meta.get("name", ""), spec.get("nodeName") or ""
    containers, terminations, events = [], [], []
    for item in status.get("containerStatuses") or []:
        restarted = bool(item.get("restartCount")) or "terminated" in (item.get("lastState") or {})
        containers.append({"name": item.get("name", ""), "restarted": restarted})
        for when, state in (("last", (item.get("lastState") or {}).get("terminated")),
                            ("current", (item.get("state") or {}).get("terminated"))):  # fmt: skip
            if not state:
                continue
            code = str(state.get("exitCode", ""))
            terminations.append(
                {"container": item.get("name", ""), "exit_code": code, "reason": state.get("reason", "")}
            )
            if code != "0" or state.get("reason") not in ("Completed", None):
                detail = f" (signal {state['signal']})" if state.get("signal") else ""
                message = (f"container {item.get('name')} of pod {name} terminated with exit code {code}{detail}"
                           f"{' (previous run)' if when == 'last' else ''}")  # fmt: skip
                if state.get("message"):
                    message += f": {state['message']}"
                events.append({"time": state.get("finishedAt"), "node": node or None, "source": "kubelet",
                               "reason": state.get("reason") or "Terminated", "message": message})  # fmt: skip
    known = {c["name"] for c in containers}
    containers += [{"name": c.get("name", ""), "restarted": False} for c in spec.get("containers") or []
                   if c.get("name") not in known]  # fmt: skip
    images = ", ".join(dict.fromkeys(c["image"] for c in spec.get("containers") or [] if c.get("image")))
    environment = {  # the literal values only (a valueFrom is resolved by the kubelet), of the compared variables
        item["name"]: item["value"]
        for c in spec.get("containers") or [] for item in c.get("env") or []
        if isinstance(item.get("name"), str) and item["name"].startswith(ENVIRONMENT_PREFIXES)
        and isinstance(item.get("value"), str)
    }  # fmt: skip
    return {"name": name, "node": node, "start": status.get("startTime"), "containers": containers,
            "terminations": terminations, "events": events, "image": images, "environment": environment}  # fmt: skip


def _flatten_event(item: dict, pod_nodes: dict) -> dict:
    involved = item.get("involvedObject") or {}
    source = item.get("source") or {}
    node = source.get("host") or None
    if involved.get("kind") == "Node":
        node = involved.get("name")
    elif involved.get("kind") == "Pod":
        node = pod_nodes.get(involved.get("name")) or node
    time = item.get("lastTimestamp") or item.get("eventTime") or item.get("firstTimestamp")
    return {"time": time, "node": node, "source": source.get("component") or item.get("reportingComponent") or "",
            "reason": item.get("reason") or "", "message": item.get("message") or ""}  # fmt: skip


def _event(flat: dict, ref: str) -> SchedulerEvent:
    time = flat.get("time")
    try:
        moment = record_time(time, ref) if time else None
    except ConnectorError:
        moment = None
    return SchedulerEvent(time=moment, node=flat.get("node"), source=flat.get("source") or "kubernetes",
                          reason=flat.get("reason") or "", message=flat.get("message") or "", ref=ref)  # fmt: skip
