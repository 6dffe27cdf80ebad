"""Prometheus ``/api/v1/query_range`` response bodies (``resultType: matrix``) as MetricSeries: what a
bundle's ``metrics/*.json`` hold, and what the Prometheus connector reads from the server."""

from __future__ import annotations

import json
import math

from engine.context import MetricSeries

NODE_LABELS = ("Hostname", "node", "instance")


def node_from_labels(labels: dict[str, str], node_labels: tuple[str, ...] = NODE_LABELS) -> str | None:
    """The node a series belongs to: the first of ``node_labels`` present (``instance`` loses its port)."""
    for name in node_labels:
        value = labels.get(name)
        if value:
            if name == "instance" and ":" in value and not value.startswith("["):
                value = value.rsplit(":", 1)[0]
            return value
    return None


def parse_query_range(body: bytes | str, ref: str, node_labels: tuple[str, ...] = NODE_LABELS) -> list[MetricSeries]:
    """Parse one response body. Raises ValueError naming ``ref`` and the offending part."""
    try:
        document = json.loads(body)
    except (ValueError, UnicodeDecodeError) as exc:
        raise ValueError(f"not valid JSON ({exc})") from None
    return series_of_document(document, ref, node_labels)


def series_of_document(document: object, ref: str, node_labels: tuple[str, ...] = NODE_LABELS) -> list[MetricSeries]:
    """The series of one decoded ``query_range`` response. Raises ValueError naming the offending part."""
    if not isinstance(document, dict):
        raise ValueError("expected a JSON object")
    if document.get("status") != "success":
        raise ValueError(f"status is {document.get('status')!r}: {document.get('error', 'no error given')}")
    data = document.get("data")
    if not isinstance(data, dict) or data.get("resultType") != "matrix":
        raise ValueError("data.resultType must be 'matrix'")
    result = data.get("result")
    if not isinstance(result, list):
        raise ValueError("data.result must be a list")
    series = []
    for index, item in enumerate(result):
        if not isinstance(item, dict) or not isinstance(item.get("metric"), dict):
            raise ValueError(f"data.result[{index}].metric must be an object")
        labels = {str(k): str(v) for k, v in item["metric"].items()}
        samples = []
        for point in item.get("values") or []:
            try:
                stamp, value = float(point[0]), float(point[1])
            except (TypeError, ValueError, IndexError):
                raise ValueError(f"data.result[{index}].values: {point!r} is not a [time, value] pair") from None
            if math.isfinite(stamp) and not math.isnan(value):
                samples.append((stamp, value))
        samples.sort()
        series.append(
            MetricSeries(
                name=labels.get("__name__", ""),
                labels=labels,
                samples=tuple(samples),
                node=node_from_labels(labels, node_labels),
                ref=f"{ref}#{index}",
            )
        )
    return series
