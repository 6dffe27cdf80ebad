"""The Prometheus metric source against a real Prometheus server with backfilled DCGM and InfiniBand
samples (scripts/prometheus.sh, samples described in scripts/prometheus_samples.py)."""

from __future__ import annotations

import socket
from datetime import UTC, datetime

import pytest

from connectors.base import DiscoveredAttempt
from connectors.gather import gather
from connectors.prometheus.source import PrometheusMetricSource
from connectors.tests.record_only import RecordOnly
from engine.context import Attempt

pytestmark = pytest.mark.prometheus
START = datetime(2025, 6, 1, 10, 30, tzinfo=UTC)
END = datetime(2025, 6, 1, 11, 30, tzinfo=UTC)


def attempt_on(*nodes: str) -> DiscoveredAttempt:
    attempt = Attempt(
        cluster="dgx",
        scheduler="slurm",
        job_id="77",
        attempt=0,
        nodes=nodes,
        start=START,
        end=END,
        state="FAILED",
        exit_code="1:0",
    )
    return DiscoveredAttempt(attempt=attempt)


def test_fetches_the_default_queries_for_the_attempts_nodes_only(prometheus_url):
    source = PrometheusMetricSource("prom", {"url": prometheus_url})
    series, reports = source.fetch_metrics(["node01", "node02"], START, END)
    by_status = {r.name: r.status for r in reports}
    assert by_status == {
        "xid": "ok",
        "ecc_dbe": "ok",
        "nvlink_errors": "ok",
        "gpu_temp": "ok",
        "ib_link_downed": "ok",
        "row_remap": "missing",
    }
    assert {s.node for s in series} == {"node01", "node02"}
    xid = {(s.node, s.labels["gpu"]): s for s in series if s.name == "DCGM_FI_DEV_XID_ERRORS"}
    assert len(xid) == 8
    samples = xid[("node02", "3")].samples
    assert samples[0] == (START.timestamp(), 0.0)
    assert samples[-1] == (END.timestamp(), 79.0)
    assert len(samples) == 241  # 15 s steps over the hour, both ends included
    ib = [s for s in series if s.name == "node_infiniband_link_downed_total"]
    assert sorted(s.labels["instance"] for s in ib) == ["node01:9100", "node02:9100"]
    assert len({s.ref for s in series}) == len(series)


@pytest.mark.parametrize(
    ("node", "subdomain"),
    [("node02", "gpu.bus"), ("node01", "gpu.memory"), ("node03", "link.infiniband")],
)
def test_the_engine_attributes_the_metric_faults_to_their_node(prometheus_url, engine, node, subdomain):
    source = PrometheusMetricSource("prom", {"url": prometheus_url})
    diagnosis = engine.diagnose(gather(attempt_on(node), RecordOnly(), metric_sources=[source]))
    assert diagnosis["outcome"] == "attributed"
    assert diagnosis["subdomain"] == subdomain
    assert diagnosis["root_cause"]["nodes"] == [node]


def test_a_configured_node_label_and_template(prometheus_url):
    source = PrometheusMetricSource(
        "prom",
        {
            "url": prometheus_url,
            "node_label": "UUID",
            "queries": {"xid": 'DCGM_FI_DEV_XID_ERRORS{$node_label=~"$nodes"}'},
        },
    )
    series, reports = source.fetch_metrics(["GPU-node02-3"], START, END)
    assert [(s.node, s.labels["Hostname"]) for s in series] == [("GPU-node02-3", "node02")]
    assert [r.status for r in reports] == ["ok"]


def test_a_bad_query_is_a_permanent_error_and_the_other_queries_still_count(prometheus_url):
    source = PrometheusMetricSource("prom", {"url": prometheus_url, "extra_queries": {"broken": "sum(("}})
    series, reports = source.fetch_metrics(["node02"], START, END)
    broken = next(r for r in reports if r.name == "broken")
    assert broken.status == "error"
    assert "HTTP 400" in broken.detail
    assert "bad_data" in broken.detail
    assert any(s.name == "DCGM_FI_DEV_XID_ERRORS" for s in series)


def test_an_unreachable_server_is_reported_and_the_diagnosis_is_still_made(engine):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    source = PrometheusMetricSource("prom", {"url": f"http://127.0.0.1:{port}", "retries": 1, "backoff": 0})
    context = gather(attempt_on("node02"), RecordOnly(), metric_sources=[source])
    assert context.metrics == ()
    assert {r.status for r in context.reports} == {"error"}
    first = sorted(context.reports, key=lambda r: r.name)[0]
    assert "after 2 tries" in first.detail
    diagnosis = engine.diagnose(context)
    statuses = {(s["name"], s["status"]) for s in diagnosis["sources"]}
    assert ("xid", "error") in statuses
    assert diagnosis["outcome"] == "unattributed"
