"""``/metrics``: who may scrape it, what it says, and a real Prometheus server that scrapes it through an operator's day
(attempts, a review and its withdrawal, a re-analysis, a deletion, notifications, drains) while every counter the
Grafana dashboard reads with ``rate()`` or ``increase()`` only goes up, and every panel's query answers."""

from __future__ import annotations

import json
import re
import socket
import subprocess
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from django.core.exceptions import ValidationError
from django.db import connection
from django.urls import reverse

from access.roles import ADMIN, TRIAGER
from diagnoses.models import Attempt, Cluster, EventCount, Review, Source
from diagnoses.services import analysis, attempts, event_counts, reviews
from handoffs.models import Drain
from handoffs.services import drains, notifications
from rules import services as rules_services

TOKEN = "a-scrape-token-for-tests"
DASHBOARD = Path(__file__).resolve().parents[2] / "contrib/grafana/faultline.json"
HOOK_VARIABLE = "FAULTLINE_TEST_METRICS_HOOK"


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


def types(text: str) -> dict[str, str]:
    """Each family's type, from the ``# TYPE`` lines (a counter's named there with its ``_total``, as in the text format
    prometheus_client writes; the family's name here without it)."""
    lines = [line.split() for line in text.splitlines() if line.startswith("# TYPE ")]
    return {re.sub(r"_total$", "", name) if kind == "counter" else name: kind for _, _, name, kind in lines}


def counter_samples(text: str) -> dict[str, float]:
    """The samples of counters and histograms: what Prometheus' ``rate()`` and ``increase()`` read."""
    kinds = types(text)
    counting = {name for name, kind in kinds.items() if kind in ("counter", "histogram")}
    return {
        key: value
        for key, value in samples(text).items()
        if re.sub(r"_(total|bucket|count|sum)$", "", key.split("{")[0]) in counting
    }


def test_the_counters_of_a_scrape_are_told_apart_from_its_gauges(client, settings, three_on_node02):
    settings.FAULTLINE_METRICS_TOKEN = TOKEN
    names = {key.split("{")[0] for key in counter_samples(scraped(client))}
    assert {"faultline_attempts_received_total", "faultline_first_diagnosis_seconds_bucket",
            "faultline_first_diagnosis_seconds_sum"} <= names  # fmt: skip
    assert not any(name.startswith(("faultline_attempts_by_verdict", "faultline_triage_backlog")) for name in names)


def scraped(client) -> str:
    return scrape(client, HTTP_AUTHORIZATION=f"Bearer {TOKEN}")


# -- who may read it -----------------------------------------------------------------------------------------------


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


def test_metrics_answer_a_signed_in_admin_and_no_one_else_signed_in(client_for, settings, db):
    settings.FAULTLINE_METRICS_TOKEN = ""
    settings.FAULTLINE_METRICS_NETWORKS = []
    assert "faultline_attempts_received_total" in scrape(client_for(ADMIN))
    for role in (TRIAGER, "rule editor", "viewer", None):
        response = client_for(role).get(reverse("metrics"))
        assert response.status_code == 403, role
        assert b"sign in as an admin" in response.content


# -- what it says --------------------------------------------------------------------------------------------------


def test_gauges_say_what_the_store_holds_now(client, settings, three_on_node02, person):
    settings.FAULTLINE_METRICS_TOKEN = TOKEN
    cluster = Cluster.objects.get(name="dgx-a")
    Source.objects.create(cluster=cluster, role="logs", name="loki", kind="loki", failures=2)
    Source.objects.create(cluster=cluster, role="metrics", name="prom", kind="prometheus")
    unattributed = three_on_node02[3].current_diagnosis
    text = scraped(client)
    values = samples(text)

    key = 'faultline_attempts_by_verdict{cluster="dgx-a",domain="hardware",outcome="attributed",subdomain="gpu.bus"}'
    assert types(text)["faultline_attempts_by_verdict"] == "gauge"
    assert values[key] == 3
    assert values['faultline_attempts_by_verdict{cluster="dgx-a",domain="",outcome="unattributed",subdomain=""}'] == 1
    assert values['faultline_triage_backlog{cluster="dgx-a"}'] == 1
    assert values['faultline_repeat_offender_root_causes{cluster="dgx-a",node="node02"}'] == 3
    assert values['faultline_repeat_offenders{cluster="dgx-a"}'] == 1
    assert values['faultline_source_up{cluster="dgx-a",kind="loki",role="logs",source="loki"}'] == 0
    assert values['faultline_source_up{cluster="dgx-a",kind="prometheus",role="metrics",source="prom"}'] == 1
    assert values['faultline_source_failures{cluster="dgx-a",source="loki"}'] == 2
    assert values['faultline_pipeline_failures{cluster="dgx-a",stage="analysis"}'] == 0

    reviews.review_create(diagnosis=unattributed, reviewer=person("triager"), verdict="insufficient_evidence")
    Drain.objects.create(cluster=cluster, node=three_on_node02[0].current_diagnosis.root_cause_nodes.get(),
                         reason="xid 79", state=Drain.State.DRAINED)  # fmt: skip
    values = samples(scraped(client))
    assert 'faultline_triage_backlog{cluster="dgx-a"}' not in values
    assert values['faultline_drained_nodes{cluster="dgx-a"}'] == 1


def operator_day(*, recent, store, person, receiver_url: str, monkeypatch, step: Callable[[str], None]) -> None:
    """What happens in a day, each step followed by ``step(name)``: a cluster configured; four attempts stored and
    analysed (three with node02 at fault, one unattributed); a review that makes the unattributed one attributed, then
    withdrawn; a re-analysis of every attempt with a rule set that names another subdomain; an attempt deleted; a
    notification that fails once and is sent; a drain run and resumed, a drain the circuit breaker refuses when it
    runs, a failed resume."""
    triager, admin = person(TRIAGER, "tess"), person(ADMIN, "ada")
    Cluster.objects.create(name="dgx-a")  # configured before its first attempt: its counters start at 0
    step("configured")
    stored = [store(recent(job, faulty=None if job == "4" else "node02")) for job in ("1", "2", "3", "4")]
    step("stored")

    unattributed = Attempt.objects.select_related("current_diagnosis").get(job__job_id="4")
    review = reviews.review_create(
        diagnosis=unattributed.current_diagnosis, reviewer=triager, verdict="corrected", corrected_outcome="attributed",
        corrected_domain="hardware", corrected_subdomain="gpu.memory", corrected_nodes=["node01"],
    )  # fmt: skip
    step("reviewed")
    reviews.review_withdraw(review=review, by=triager)
    step("withdrawn")

    first = rules_services.active_revision()
    text = first.text.replace("subdomain: gpu.bus", "subdomain: gpu.firmware")
    revision = rules_services.revision_create(ruleset=first.ruleset, text=text, parent=first, message="firmware")
    rules_services.revision_activate(revision=revision)
    for attempt in stored:
        analysis.attempt_analyse(attempt_id=attempt.pk)
    step("reanalysed")

    Attempt.objects.filter(pk=stored[0].pk).delete()
    step("deleted")

    monkeypatch.setenv(HOOK_VARIABLE, receiver_url)
    rule = notifications.rule_save(name="all", channel="webhook", url_env=HOOK_VARIABLE, group_seconds=0)
    incident = notifications.incident_add(rule=rule, item=notifications.backlog_item(3, 1))
    assert notifications.incident_deliver(incident_id=incident.pk, number=1, final=False) is False  # 503
    assert notifications.incident_deliver(incident_id=incident.pk, number=2, final=False) is True
    step("notified")

    Cluster.objects.filter(name="dgx-a").update(connector="slurm", scheduler_settings={"command_prefix": ["true"]})
    cluster = Cluster.objects.get(name="dgx-a")
    drains.drain_policy_set(cluster=cluster, user=admin, max_drained=1)
    node01, node02 = cluster.nodes.get(name="node01"), cluster.nodes.get(name="node02")
    drained = drains.drain_approve(drain=drains.drain_propose(node=node02, reason="xid 79", user=triager), user=admin)
    drains.drain_run(drain_id=drained.pk)  # when the approval's task has not run it (a test's own transaction)
    refused = drains.drain_propose(node=node01, reason="xid 48", user=triager)
    Drain.objects.filter(pk=refused.pk).update(state=Drain.State.APPROVED)  # approved before the other one drained
    drains.drain_run(drain_id=refused.pk)
    drains.drain_resume(drain=Drain.objects.get(pk=drained.pk), user=admin)
    redrained = drains.drain_propose(node=node02, reason="again", user=triager)
    Drain.objects.filter(pk=redrained.pk).update(state=Drain.State.APPROVED)
    drains.drain_run(drain_id=redrained.pk)
    Cluster.objects.filter(pk=cluster.pk).update(scheduler_settings={"command_prefix": ["false"]})
    with pytest.raises(ValidationError, match="resume failed"):
        drains.drain_resume(drain=Drain.objects.get(pk=redrained.pk), user=admin)
    step("drained")


def test_counters_count_each_event_once_and_never_go_down(
    client, settings, recent, store, person, webhook_receiver, monkeypatch
):
    """Through the operator's day, each scrape's counters are at least the scrape's before (a review, its withdrawal,
    a re-analysis and a deletion move the gauges only), and at the end they say what happened."""
    settings.FAULTLINE_METRICS_TOKEN = TOKEN
    webhook_receiver.statuses.append(503)
    before: dict[str, float] = {}
    went_down: list[tuple[str, str, float, float]] = []

    def step(name: str) -> None:
        now = counter_samples(scraped(client))
        went_down.extend((name, key, before[key], value) for key, value in now.items() if value < before.get(key, 0))
        assert set(before) <= set(now), (name, set(before) - set(now))  # no counter's series goes away either
        before.update(now)

    operator_day(recent=recent, store=store, person=person, receiver_url=f"{webhook_receiver.url}/hook",
                 monkeypatch=monkeypatch, step=step)  # fmt: skip
    assert went_down == []

    values = samples(scraped(client))
    assert values['faultline_attempts_received_total{cluster="dgx-a",via="upload"}'] == 4
    assert values['faultline_attempts_received_total{cluster="dgx-a",via="discovery"}'] == 0
    # four first analyses, then four re-analyses with the firmware revision (the deleted attempt's counted too)
    assert values['faultline_analyses_total{cluster="dgx-a",result="attributed"}'] == 6
    assert values['faultline_analyses_total{cluster="dgx-a",result="unattributed"}'] == 2
    assert values['faultline_analyses_total{cluster="dgx-a",result="failed"}'] == 0
    assert values['faultline_first_diagnoses_total{cluster="dgx-a",domain="hardware",outcome="attributed"}'] == 3
    assert values['faultline_first_diagnoses_total{cluster="dgx-a",domain="",outcome="unattributed"}'] == 1
    assert values['faultline_reviews_total{cluster="dgx-a",verdict="corrected"}'] == 1
    assert values['faultline_reviews_total{cluster="dgx-a",verdict="confirmed"}'] == 0
    assert values['faultline_reviews_withdrawn_total{cluster="dgx-a"}'] == 1
    assert values['faultline_notification_deliveries_total{channel="webhook",result="failed"}'] == 1
    assert values['faultline_notification_deliveries_total{channel="webhook",result="ok"}'] == 1
    assert values['faultline_notification_deliveries_total{channel="email",result="ok"}'] == 0
    commands = 'faultline_drain_commands_total{{action="{}",cluster="dgx-a",result="{}"}}'
    assert values[commands.format("drain", "ok")] == 2
    assert values[commands.format("drain", "refused")] == 1
    assert values[commands.format("resume", "ok")] == 1
    assert values[commands.format("resume", "failed")] == 1
    # uploaded bundles: from their arrival, seconds ago
    assert values['faultline_first_diagnosis_seconds_count{since="arrival"}'] == 4
    assert values['faultline_first_diagnosis_seconds_bucket{le="5",since="arrival"}'] == 4
    assert 0 <= values['faultline_first_diagnosis_seconds_sum{since="arrival"}'] < 20
    assert values['faultline_first_diagnosis_seconds_count{since="end"}'] == 0

    # the gauges moved with the verdicts: the re-analysis moved three attempts to gpu.firmware, one was deleted
    key = 'faultline_attempts_by_verdict{{cluster="dgx-a",domain="hardware",outcome="attributed",subdomain="{}"}}'
    assert values[key.format("gpu.firmware")] == 2
    assert key.format("gpu.bus") not in values


def test_the_time_to_a_first_diagnosis_counts_from_the_jobs_end_when_discovery_found_it(
    client, settings, folder_cluster, drop, recent, polled, db
):
    """An attempt found by discovery is measured from its job's end (it ended about an hour before), once: analysing
    it again with another revision leaves the histogram alone."""
    settings.FAULTLINE_METRICS_TOKEN = TOKEN
    cluster = folder_cluster(drop)
    bundle = recent("77", root=drop)
    assert polled(cluster) == 1
    attempt = Attempt.objects.get(job__job_id="77")
    ended = (attempt.current_diagnosis.created - attempt.end).total_seconds()
    assert 3600 < ended < 4 * 3600
    values = samples(scraped(client))
    assert values['faultline_attempts_received_total{cluster="dgx-a",via="discovery"}'] == 1
    assert values['faultline_first_diagnosis_seconds_count{since="end"}'] == 1
    assert values['faultline_first_diagnosis_seconds_bucket{le="3600",since="end"}'] == 0
    assert values['faultline_first_diagnosis_seconds_bucket{le="14400",since="end"}'] == 1
    assert values['faultline_first_diagnosis_seconds_sum{since="end"}'] == pytest.approx(ended, abs=1)

    first = rules_services.active_revision()
    revision = rules_services.revision_create(ruleset=first.ruleset, text=first.text + "\n", parent=first)
    rules_services.revision_activate(revision=revision)
    analysis.attempt_analyse(attempt_id=attempt.pk)
    again = samples(scraped(client))
    assert again['faultline_first_diagnosis_seconds_count{since="end"}'] == 1
    assert again['faultline_analyses_total{cluster="dgx-a",result="attributed"}'] == 2
    assert bundle.exists()


def test_a_failed_analysis_is_counted_once(client, settings, recent, replace_in, db):
    settings.FAULTLINE_METRICS_TOKEN = TOKEN
    bundle = recent("9")
    attempt = attempts.attempt_ingest_directory(path=bundle, analyse=False)
    (Path(settings.FAULTLINE_BUNDLE_ROOT) / attempt.bundle / "attempt.json").write_text("{")
    assert analysis.attempt_analyse(attempt_id=attempt.pk) is None
    values = samples(scraped(client))
    assert values['faultline_analyses_total{cluster="dgx-a",result="failed"}'] == 1
    assert values['faultline_pipeline_failures{cluster="dgx-a",stage="analysis"}'] == 1
    assert values['faultline_first_diagnoses_total{cluster="dgx-a",domain="",outcome="unattributed"}'] == 0


@pytest.mark.django_db(transaction=True)
def test_processes_counting_at_once_lose_nothing():
    """Two threads, each its own connection and transactions, count the same events at once."""
    start = threading.Barrier(2)
    failures = []

    def work():
        try:
            start.wait()
            for _ in range(100):
                event_counts.events_count(
                    event_counts.review_recorded("dgx-a", Review.Verdict.CONFIRMED),
                    event_counts.notification_delivery("slack", ok=True),
                )
        except Exception as exc:  # reported below, in the test's thread
            failures.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=work) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    assert sorted(EventCount.objects.values_list("name", "value")) == [
        ("notification_deliveries", 200),
        ("reviews", 200),
    ]


def test_a_scrape_within_the_cache_period_gets_the_answer_collected_before(client, settings, three_on_node02):
    from django.core.cache import cache

    settings.FAULTLINE_METRICS_TOKEN = TOKEN
    settings.FAULTLINE_METRICS_CACHE_SECONDS = 60
    cache.clear()
    key = 'faultline_attempts_by_verdict{cluster="dgx-a",domain="hardware",outcome="attributed",subdomain="gpu.bus"}'
    assert samples(scraped(client))[key] == 3
    Attempt.objects.filter(pk=three_on_node02[0].pk).delete()
    assert samples(scraped(client))[key] == 3
    cache.clear()
    assert samples(scraped(client))[key] == 2


def test_repeat_offender_series_are_bounded(client, settings, three_on_node02):
    settings.FAULTLINE_METRICS_TOKEN = TOKEN
    settings.FAULTLINE_REPEAT_OFFENDER_COUNT = 1
    settings.FAULTLINE_METRICS_MAX_NODES = 1
    values = samples(scraped(client))
    assert [k for k in values if k.startswith("faultline_repeat_offender_root_causes")] == [
        'faultline_repeat_offender_root_causes{cluster="dgx-a",node="node02"}'
    ]


# -- a real Prometheus server and the Grafana dashboard ------------------------------------------------------------


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


def prometheus_api(url: str, path: str, **parameters) -> dict:
    """An answer of Prometheus' HTTP API (its ``data``); an error answer fails the test with Prometheus' message."""
    address = f"{url}/api/v1/{path}?{urllib.parse.urlencode(parameters)}"
    try:
        with urllib.request.urlopen(address, timeout=10) as response:
            body = json.load(response)
    except urllib.error.HTTPError as exc:
        body = json.load(exc)
    assert body["status"] == "success", (parameters, body)
    return body["data"]


def promql(url: str, query: str) -> list[dict]:
    try:
        return prometheus_api(url, "query", query=query)["result"]
    except OSError:  # not listening yet
        return []


def dashboard_expressions() -> list[str]:
    """Every PromQL expression of the dashboard's panels and variables, Grafana's variables filled in as Grafana
    would (all clusters, a rate interval of four scrapes)."""
    dashboard = json.loads(DASHBOARD.read_text())
    expressions = [target["expr"] for panel in dashboard["panels"] for target in panel["targets"]]
    return [expr.replace("$__rate_interval", "4s").replace("$cluster", ".*") for expr in expressions]


def read_as_counters(expressions: list[str]) -> set[str]:
    """The series names the expressions read with ``rate()``, ``irate()`` or ``increase()``: counters to them."""
    return {name for expr in expressions for name in re.findall(r"\b(?:rate|irate|increase)\(\s*(faultline_\w+)", expr)}


@pytest.mark.prometheus
def test_a_real_prometheus_sees_no_counter_of_the_dashboard_go_down_through_the_day(
    live_server, settings, transactional_roles, recent, store, person, webhook_receiver, monkeypatch, own_prometheus
):
    """A Prometheus server scrapes the live server every second while the operator's day happens; after each step the
    test waits for a scrape of it. Then: every series the dashboard reads as a counter is one in /metrics and never
    went down in Prometheus' own data (no reset: ``resets()`` is 0, and each sample is at least the one before); every
    panel's query answers, the first-diagnoses panels with the day's attempts."""
    settings.FAULTLINE_METRICS_TOKEN = TOKEN
    settings.FAULTLINE_METRICS_NETWORKS = []
    settings.ALLOWED_HOSTS = ["127.0.0.1", "localhost"]
    webhook_receiver.statuses.append(503)
    target = urllib.parse.urlsplit(live_server.url).netloc
    prometheus = own_prometheus(target)
    started = time.time()

    def step(name: str) -> None:
        """Wait for a scrape that began after the step's last change (up's sample time is its scrape's start)."""
        done = time.time()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            up = promql(prometheus, 'up{job="faultline"}')
            if up and float(up[0]["value"][1]) == 1 and float(up[0]["value"][0]) > done + 1:
                return
            time.sleep(0.3)
        raise AssertionError(f"Prometheus did not scrape {target} after the step {name}")

    step("start")
    operator_day(recent=recent, store=store, person=person, receiver_url=f"{webhook_receiver.url}/hook",
                 monkeypatch=monkeypatch, step=step)  # fmt: skip
    ended = time.time()

    expressions = dashboard_expressions()
    counters = read_as_counters(expressions)
    assert {"faultline_first_diagnoses_total", "faultline_first_diagnosis_seconds_bucket",
            "faultline_notification_deliveries_total", "faultline_drain_commands_total"} <= counters  # fmt: skip
    exposed = urllib.request.urlopen(
        urllib.request.Request(f"{live_server.url}/metrics", headers={"Authorization": f"Bearer {TOKEN}"}), timeout=10
    ).read().decode()  # fmt: skip
    kinds = types(exposed)
    for name in counters:
        family = re.sub(r"_(total|bucket)$", "", name)
        assert kinds.get(family) in ("counter", "histogram"), (
            f"the dashboard reads {name} as a counter: {kinds.get(family)}"
        )

    checked = 0
    for name in sorted(counters):
        series = prometheus_api(prometheus, "query_range", query=name, start=started, end=ended + 2, step=1)["result"]
        assert series, f"Prometheus holds no {name}"
        for one in series:
            values = [float(value) for _, value in one["values"]]
            assert values == sorted(values), f"{name}{one['metric']} went down: {values}"
            checked += 1
        window = f"{int(ended - started) + 10}s"
        resets = promql(prometheus, f"sum(resets({name}[{window}]))")
        assert float(resets[0]["value"][1]) == 0, (name, resets)
    assert checked > 50  # every cluster's, channel's and bucket's series

    for expr in expressions:
        prometheus_api(prometheus, "query", query=expr)  # each panel's query answers (an error fails)
    per_domain = promql(prometheus, expressions[4])  # failed attempts per hour by domain (an empty label: none)
    assert {
        row["metric"].get("domain", ""): round(float(row["value"][1])) for row in per_domain if float(row["value"][1])
    } in (
        {"hardware": 3, "": 1},
        {"hardware": 4, "": 1},  # increase() extrapolates to the window's edges: one more, rounded, at most
    )
    assert float(promql(prometheus, 'faultline_attempts_by_verdict{subdomain="gpu.firmware"}')[0]["value"][1]) == 2


@pytest.mark.prometheus
def test_the_grafana_dashboard_queries_parse_and_use_only_exposed_series(client, settings, three_on_node02, tmp_path):
    """Each panel's PromQL parses (promtool, installed with Prometheus, checks it as a recording rule) and names only
    series /metrics exposes; the cluster variable reads a counter every cluster has."""
    settings.FAULTLINE_METRICS_TOKEN = TOKEN
    Cluster.objects.filter(name="dgx-a").update(connector="slurm")  # its drain commands' series
    cluster = Cluster.objects.get(name="dgx-a")
    Source.objects.create(cluster=cluster, role="logs", name="loki", kind="loki")
    Drain.objects.create(cluster=cluster, node=cluster.nodes.get(name="node02"), reason="x", state="drained")
    exposed = {key.split("{")[0] for key in samples(scraped(client))}
    dashboard = json.loads(DASHBOARD.read_text())
    expressions = [target["expr"] for panel in dashboard["panels"] for target in panel["targets"]]
    variable = dashboard["templating"]["list"][1]["query"]["query"]
    named = {name for expr in [*expressions, variable] for name in re.findall(r"\bfaultline_\w+", expr)}
    assert named
    assert named <= exposed, named - exposed
    rules = [{"record": f"faultline:panel{i}", "expr": expr.replace("$__rate_interval", "5m").replace("$cluster", ".*")}
             for i, expr in enumerate(expressions)]  # fmt: skip
    (tmp_path / "rules.yml").write_text(json.dumps({"groups": [{"name": "dashboard", "rules": rules}]}))
    checked = subprocess.run(
        ["promtool", "check", "rules", str(tmp_path / "rules.yml")], capture_output=True, text=True
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
