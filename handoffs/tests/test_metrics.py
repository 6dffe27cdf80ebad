"""``/metrics``: who may scrape it, what it says, and a real Prometheus server that scrapes it and answers PromQL."""

from __future__ import annotations

import json
import socket
import subprocess
import time
import urllib.parse
import urllib.request
from datetime import UTC, datetime, timedelta

import pytest
from django.urls import reverse

from diagnoses.models import Attempt, Cluster, Source
from diagnoses.services import reviews, verdict_days
from handoffs.models import Drain

TOKEN = "a-scrape-token-for-tests"


@pytest.fixture(autouse=True)
def no_metrics_cache(settings):
    """Each scrape collects anew (the cache has its own test)."""
    settings.FAULTLINE_METRICS_CACHE_SECONDS = 0


@pytest.fixture
def recent(make_bundle):
    """``recent(job_id, **fields)``: a GPU-off-the-bus bundle (node02 at fault) of an attempt that ended an hour ago."""
    start = datetime.now(UTC).replace(microsecond=0) - timedelta(hours=2)
    return lambda job_id, **fields: make_bundle(job_id=job_id, start=start, **fields)


@pytest.fixture
def three_on_node02(recent, store):
    """Three attempts on dgx-a whose root cause is node02 (a repeat offender) and one unattributed attempt."""
    attempts = [store(recent(str(job))) for job in (1, 2, 3)]
    attempts.append(store(recent("4", faulty=None)))
    return attempts


def scrape(client, **headers) -> str:
    response = client.get(reverse("metrics"), **headers)
    assert response.status_code == 200, response.content
    assert response["Content-Type"].startswith("text/plain; version=0.0.4")
    return response.content.decode()


def samples(text: str) -> dict[str, float]:
    return {line.rsplit(" ", 1)[0]: float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if line[:1] != "#"}


def test_metrics_refuse_a_scrape_without_the_token_or_an_allowed_network(client, settings, db):
    settings.FAULTLINE_METRICS_TOKEN = TOKEN
    settings.FAULTLINE_METRICS_NETWORKS = []
    assert client.get(reverse("metrics")).status_code == 403
    assert client.get(reverse("metrics"), HTTP_AUTHORIZATION="Bearer wrong").status_code == 403
    assert client.get(reverse("metrics"), HTTP_AUTHORIZATION=f"Bearer {TOKEN}").status_code == 200
    settings.FAULTLINE_METRICS_TOKEN = ""
    assert client.get(reverse("metrics"), HTTP_AUTHORIZATION="Bearer ").status_code == 403


def test_metrics_answer_an_allowed_network_without_a_token(client, settings, db):
    import ipaddress

    settings.FAULTLINE_METRICS_TOKEN = ""
    settings.FAULTLINE_METRICS_NETWORKS = [ipaddress.ip_network("10.0.0.0/8")]
    assert client.get(reverse("metrics"), REMOTE_ADDR="10.1.2.3").status_code == 200
    assert client.get(reverse("metrics"), REMOTE_ADDR="192.168.1.1").status_code == 403


def test_metrics_count_attempts_backlog_offenders_sources_and_latency(client, settings, three_on_node02, person):
    settings.FAULTLINE_METRICS_TOKEN = TOKEN
    cluster = Cluster.objects.get(name="dgx-a")
    Source.objects.create(cluster=cluster, role="logs", name="loki", kind="loki", failures=2)
    Source.objects.create(cluster=cluster, role="metrics", name="prom", kind="prometheus")
    unattributed = three_on_node02[3].current_diagnosis
    slow = three_on_node02[0]
    Attempt.objects.filter(pk=slow.pk).update(received=slow.current_diagnosis.created - timedelta(hours=2))
    verdict_days.verdict_days_rebuild()  # the arrival moved by hand, not by a service: the rollup built again
    values = samples(scrape(client, HTTP_AUTHORIZATION=f"Bearer {TOKEN}"))

    key = 'faultline_failed_attempts_total{cluster="dgx-a",domain="hardware",outcome="attributed",subdomain="gpu.bus"}'
    assert values[key] == 3
    assert values[f'faultline_failed_attempts_total{{cluster="dgx-a",domain="",outcome="{unattributed.outcome}",'
                  'subdomain=""}'] == 1  # fmt: skip
    assert values['faultline_triage_backlog{cluster="dgx-a"}'] == 1
    assert values['faultline_repeat_offender_root_causes{cluster="dgx-a",node="node02"}'] == 3
    assert values['faultline_repeat_offenders{cluster="dgx-a"}'] == 1
    assert values['faultline_source_up{cluster="dgx-a",kind="loki",role="logs",source="loki"}'] == 0
    assert values['faultline_source_up{cluster="dgx-a",kind="prometheus",role="metrics",source="prom"}'] == 1
    assert values['faultline_source_failures{cluster="dgx-a",source="loki"}'] == 2
    assert values['faultline_pipeline_failures{cluster="dgx-a",stage="analysis"}'] == 0
    assert values["faultline_analysis_latency_seconds_count"] == 4
    assert values['faultline_analysis_latency_seconds_bucket{le="+Inf"}'] == 4
    assert values['faultline_analysis_latency_seconds_bucket{le="3600"}'] == 3  # the slow one took two hours
    assert values['faultline_analysis_latency_seconds_bucket{le="14400"}'] == 4
    assert values["faultline_analysis_latency_seconds_sum"] >= 7200

    reviews.review_create(diagnosis=unattributed, reviewer=person("triager"), verdict="insufficient_evidence")
    Drain.objects.create(cluster=cluster, node=three_on_node02[0].current_diagnosis.root_cause_nodes.get(),
                         reason="xid 79", state=Drain.State.DRAINED)  # fmt: skip
    values = samples(scrape(client, HTTP_AUTHORIZATION=f"Bearer {TOKEN}"))
    assert 'faultline_triage_backlog{cluster="dgx-a"}' not in values
    assert values['faultline_drained_nodes{cluster="dgx-a"}'] == 1


def test_a_scrape_within_the_cache_period_gets_the_answer_collected_before(client, settings, three_on_node02):
    from django.core.cache import cache

    settings.FAULTLINE_METRICS_TOKEN = TOKEN
    settings.FAULTLINE_METRICS_CACHE_SECONDS = 60
    cache.clear()
    key = 'faultline_failed_attempts_total{cluster="dgx-a",domain="hardware",outcome="attributed",subdomain="gpu.bus"}'
    assert samples(scrape(client, HTTP_AUTHORIZATION=f"Bearer {TOKEN}"))[key] == 3
    Attempt.objects.filter(pk=three_on_node02[0].pk).delete()
    assert samples(scrape(client, HTTP_AUTHORIZATION=f"Bearer {TOKEN}"))[key] == 3
    cache.clear()
    assert samples(scrape(client, HTTP_AUTHORIZATION=f"Bearer {TOKEN}"))[key] == 2


def test_repeat_offender_series_are_bounded(client, settings, three_on_node02):
    settings.FAULTLINE_METRICS_TOKEN = TOKEN
    settings.FAULTLINE_REPEAT_OFFENDER_COUNT = 1
    settings.FAULTLINE_METRICS_MAX_NODES = 1
    values = samples(scrape(client, HTTP_AUTHORIZATION=f"Bearer {TOKEN}"))
    assert [k for k in values if k.startswith("faultline_repeat_offender_root_causes")] == [
        'faultline_repeat_offender_root_causes{cluster="dgx-a",node="node02"}'
    ]


# -- a real Prometheus server --------------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def own_prometheus(tmp_path, prometheus_url):
    """``own_prometheus(target)``: a Prometheus server of this test alone (its own port, configuration and data),
    scraping ``target``'s ``/metrics`` every second with the bearer token; its URL. Stopped after the test. (The shared
    server of scripts/prometheus.sh is left alone; asking for it makes sure Prometheus is installed.)"""
    started = []

    def start(target: str) -> str:
        (tmp_path / "token").write_text(TOKEN)
        config = {
            "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
            "scrape_configs": [{
                "job_name": "faultline",
                "metrics_path": "/metrics",
                "authorization": {"type": "Bearer", "credentials_file": str(tmp_path / "token")},
                "static_configs": [{"targets": [target]}],
            }],
        }  # fmt: skip
        (tmp_path / "prometheus.yml").write_text(json.dumps(config))  # JSON is YAML
        port = free_port()
        log = open(tmp_path / "prometheus.log", "wb")  # noqa: SIM115 - closed with the process
        started.append((subprocess.Popen(
            ["prometheus", f"--config.file={tmp_path / 'prometheus.yml'}", f"--storage.tsdb.path={tmp_path / 'data'}",
             f"--web.listen-address=127.0.0.1:{port}"],
            stdout=log, stderr=subprocess.STDOUT,
        ), log))  # fmt: skip
        return f"http://127.0.0.1:{port}"

    yield start
    for process, log in started:
        process.terminate()
        process.wait(timeout=30)
        log.close()


def promql(url: str, query: str) -> list[dict]:
    address = f"{url}/api/v1/query?{urllib.parse.urlencode({'query': query})}"
    try:
        with urllib.request.urlopen(address, timeout=5) as response:
            return json.load(response)["data"]["result"]
    except OSError:  # not listening yet
        return []


@pytest.mark.prometheus
def test_a_real_prometheus_scrapes_the_metrics_and_answers_promql(
    live_server, settings, browser_roles, three_on_node02, own_prometheus
):
    settings.FAULTLINE_METRICS_TOKEN = TOKEN
    settings.FAULTLINE_METRICS_NETWORKS = []
    settings.ALLOWED_HOSTS = ["127.0.0.1", "localhost"]
    target = urllib.parse.urlsplit(live_server.url).netloc
    prometheus = own_prometheus(target)
    query = 'sum(faultline_failed_attempts_total{cluster="dgx-a",outcome="attributed",subdomain="gpu.bus"})'
    deadline = time.monotonic() + 60
    result = []
    while time.monotonic() < deadline and not result:
        result = promql(prometheus, query)
        time.sleep(0.5)
    assert result, f"Prometheus never scraped {target}"
    assert float(result[0]["value"][1]) == 3
    up = promql(prometheus, 'up{job="faultline"}')
    assert float(up[0]["value"][1]) == 1
    offender = promql(prometheus, 'faultline_repeat_offender_root_causes{node="node02"}')
    assert float(offender[0]["value"][1]) == 3


# -- the Grafana dashboard -----------------------------------------------------------------------------------------


@pytest.mark.prometheus
def test_the_grafana_dashboard_queries_parse_and_use_only_exposed_series(
    client, settings, three_on_node02, tmp_path, prometheus_url
):
    """Each panel's PromQL parses (promtool, installed with Prometheus, checks it as a recording rule) and names only
    series /metrics exposes."""
    import re
    from pathlib import Path

    settings.FAULTLINE_METRICS_TOKEN = TOKEN
    cluster = Cluster.objects.get(name="dgx-a")
    Source.objects.create(cluster=cluster, role="logs", name="loki", kind="loki")
    Drain.objects.create(cluster=cluster, node=cluster.nodes.get(name="node02"), reason="x", state="drained")
    exposed = {key.split("{")[0] for key in samples(scrape(client, HTTP_AUTHORIZATION=f"Bearer {TOKEN}"))}
    exposed |= {
        "faultline_notification_deliveries_total"  # no delivery yet: a counter without samples
    }
    dashboard = json.loads((Path(__file__).resolve().parents[2] / "contrib/grafana/faultline.json").read_text())
    expressions = [target["expr"] for panel in dashboard["panels"] for target in panel["targets"]]
    named = {name for expr in expressions for name in re.findall(r"\bfaultline_\w+", expr)}
    assert named
    assert named <= exposed
    rules = [{"record": f"faultline:panel{i}", "expr": expr.replace("$__rate_interval", "5m").replace("$cluster", ".*")}
             for i, expr in enumerate(expressions)]  # fmt: skip
    (tmp_path / "rules.yml").write_text(json.dumps({"groups": [{"name": "dashboard", "rules": rules}]}))
    checked = subprocess.run(
        ["promtool", "check", "rules", str(tmp_path / "rules.yml")], capture_output=True, text=True
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
