"""Prometheus ``/api/v1/query_range`` response bodies (``resultType: matrix``) for ``metrics/*.json``.

The series are the ones dcgm-exporter and node_exporter publish, with their labels: the DCGM Xid
gauge (which keeps the last Xid a GPU reported), GPU temperature, the volatile double-bit ECC counter,
and InfiniBand's ``link_downed`` counter.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime

Series = dict  # {"metric": {labels}, "values": [[unix seconds, "value"], ...]}


def sample_times(begin: datetime, end: datetime, step: int) -> list[int]:
    """Prometheus's evaluation times: every ``step`` seconds from ``begin`` rounded down."""
    first = int(begin.timestamp()) // step * step
    last = int(end.timestamp())
    return list(range(first, last + 1, step))


def series(labels: dict[str, str], times: list[int], value: Callable[[int], float]) -> Series:
    return {"metric": labels, "values": [[t, _number(value(t))] for t in times]}


def _number(value: float) -> str:
    return str(int(value)) if value == int(value) else f"{value:.1f}"


def dcgm_labels(name: str, node: str, ip: str, gpu: int, uuid: str, model: str, driver: str) -> dict[str, str]:
    return {
        "__name__": name,
        "gpu": str(gpu),
        "UUID": uuid,
        "device": f"nvidia{gpu}",
        "modelName": model,
        "Hostname": node,
        "DCGM_FI_DRIVER_VERSION": driver,
        "instance": f"{ip}:9400",
        "job": "dcgm-exporter",
    }


def node_exporter_labels(name: str, node: str, **labels: str) -> dict[str, str]:
    return {"__name__": name, **labels, "instance": f"{node}:9100", "job": "node"}


def query_range(result: list[Series]) -> bytes:
    body = {"status": "success", "data": {"resultType": "matrix", "result": result}}
    return json.dumps(body, separators=(",", ":")).encode()
