"""Sources behaving badly (timeouts, 5xx, malformed JSON, partial pages) at the pipeline's level: retried when
transient, recorded in the diagnosis's ``sources``, a source that is down backed off, and the diagnosis still
made from what was gathered. The Loki and Kubernetes/Kueue APIs are local doubles speaking their formats."""

import contextlib
import socket
import threading
import time
from datetime import UTC, datetime

import pytest
from django.utils import timezone

from diagnoses.models import Attempt, Cluster, Source
from diagnoses.services import attempts, clusters, discovery

pytestmark = pytest.mark.django_db
NODES = ("node01", "node02", "node03", "node04")
XID = "Nov  2 10:03:30 node02 kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, GPU has fallen off the bus."


def ns(moment: datetime) -> int:
    return int(moment.timestamp()) * 1_000_000_000


@pytest.fixture
def loki(make_bundle, loki_double):
    """Kernel logs of the four nodes of ``make_bundle``'s attempts; node02's GPU falls off the bus."""
    streams = [
        ({"host": n, "job": "kern"}, [(ns(make_bundle.start) + 10**9, f"Nov  2 10:00:01 {n} kernel: eth0 up")])
        for n in NODES
    ]
    streams[1][1].append((ns(make_bundle.start) + 210 * 10**9, XID))
    return loki_double(streams)


@pytest.fixture
def watched(tmp_path, loki, django_capture_on_commit_callbacks, make_bundle, folder_cluster):
    """A cluster watching a folder, with Loki as a log source; ``discover(job_id)`` drops a bundle into the
    folder, polls, and returns the attempt as stored and diagnosed."""
    drop = tmp_path / "drop"
    settings = {"url": loki.url, "queries": {"kern": '{host="$node", job="kern"}'}, "retries": 1, "backoff": 0,
                "timeout": 0.3}  # fmt: skip
    configured = folder_cluster(drop, sources=[{"role": "logs", "name": "loki", "kind": "loki", "settings": settings}])

    def discover(job_id: str) -> Attempt:
        make_bundle(root=drop, job_id=job_id)
        with django_capture_on_commit_callbacks(execute=True):
            assert discovery.cluster_poll(cluster_id=configured.pk) == 1
        return Attempt.objects.select_related("current_diagnosis").get(job__job_id=job_id)

    return discover


def kern(attempt: Attempt) -> dict:
    """What Loki's source reported of the ``kern`` stream in the attempt's diagnosis."""
    sources = attempt.current_diagnosis.document["sources"]
    return next(s for s in sources if s["name"] == "kern" and s["detail"].startswith("loki:"))


def slow(loki):
    real = loki.answer

    def answer(request):
        time.sleep(1)
        return real(request)

    return answer


def test_a_transient_5xx_is_retried_and_the_logs_gathered(watched, loki):
    loki.faults = [(503, {}, "upstream unavailable")]

    attempt = watched("1")

    assert kern(attempt) == {
        "name": "kern",
        "kind": "system",
        "status": "ok",
        "detail": "loki: 5 lines from 4 of 4 nodes",
    }
    assert len(loki.requests) == 5  # four nodes, one of them asked twice
    source = Source.objects.get()
    assert (source.failures, source.retry_after) == (0, None)
    assert source.last_ok is not None


@pytest.mark.parametrize(
    ("fault", "detail"),
    [
        ("5xx", "HTTP 502 bad gateway (after 2 tries)"),
        ("timeout", "timed out after 0.3 s (after 2 tries)"),
        ("malformed", "malformed JSON"),
    ],
)
def test_a_source_that_is_down_is_a_visible_gap_then_backed_off_then_asked_again(watched, loki, fault, detail):
    if fault == "timeout":
        loki.respond = slow(loki)
    else:
        loki.faults = [(502, {}, "bad gateway") if fault == "5xx" else (200, {}, b'{"status": "succ')] * 10

    first = watched("1")

    assert (first.analysis_state, first.current_diagnosis.subdomain) == ("analysed", "gpu.bus")  # from the bundle
    gap = kern(first)
    assert (gap["kind"], gap["status"]) == ("system", "error")
    assert detail in gap["detail"]
    source = Source.objects.get()
    assert source.failures == 1
    assert detail in source.last_error
    assert 119 < (source.retry_after - source.last_failure).total_seconds() <= 120  # 60 s doubled

    asked = len(loki.requests)
    second = watched("2")

    assert len(loki.requests) == asked  # backing off: not asked
    skipped = next(s for s in second.current_diagnosis.document["sources"] if s["name"] == "loki")
    assert skipped["status"] == "error"
    assert skipped["detail"].startswith("loki: not asked: it failed 1 time(s) in a row, last at ")
    assert second.current_diagnosis.subdomain == "gpu.bus"

    loki.faults.clear()
    loki.respond = loki.answer
    Source.objects.update(retry_after=timezone.now())
    third = watched("3")

    assert kern(third)["status"] == "ok"
    source.refresh_from_db()
    assert (source.failures, source.retry_after) == (0, None)


def test_a_partial_page_is_reported_partial_and_the_source_is_not_down(watched, loki, make_bundle):
    entry = [str(ns(make_bundle.start) + 10**9), "Nov  2 10:00:01 x y"]
    page = {"status": "success", "data": {"resultType": "streams", "result": [
        {"stream": {"host": "node01", "job": "kern"}, "values": [entry]}],
        "stats": {"summary": {"totalEntriesReturned": 4}}}}  # fmt: skip
    loki.faults = [(200, {}, page)]

    attempt = watched("1")

    assert kern(attempt)["status"] == "partial"
    assert "claimed 4 entries but carried 1" in kern(attempt)["detail"]
    assert Source.objects.get().failures == 0


def test_a_scheduler_that_cannot_give_the_attempt_is_a_gap_and_the_record_is_still_diagnosed(
    tmp_path, django_capture_on_commit_callbacks, make_bundle, folder_cluster
):
    drop = tmp_path / "drop"
    configured = folder_cluster(drop, gather_delay=3600)
    bundle = make_bundle(root=drop, state="NODE_FAIL")
    discovery.cluster_poll(cluster_id=configured.pk)  # queued, not gathered yet
    for file in sorted(bundle.rglob("*"), reverse=True):
        file.unlink() if file.is_file() else file.rmdir()
    bundle.rmdir()

    with django_capture_on_commit_callbacks(execute=True):
        attempts.attempt_reanalyse(attempt=Attempt.objects.get())

    attempt = Attempt.objects.get()
    assert attempt.analysis_state == "analysed"
    scheduler = next(s for s in attempt.current_diagnosis.document["sources"] if s["name"] == "dgx-a")
    assert (scheduler["kind"], scheduler["status"]) == ("scheduler", "error")
    assert "not a directory (permanent)" in scheduler["detail"]


# -- Kueue and Kubernetes as a cluster's scheduler --


@pytest.fixture
def kueue(kubernetes_api, django_capture_on_commit_callbacks):
    """A cluster whose scheduler is Kueue behind the Kubernetes API double; ``poll()`` polls it once."""
    lookback = max(86400.0, (datetime.now(UTC) - datetime(2026, 11, 2, tzinfo=UTC)).total_seconds())
    configured = clusters.cluster_configure(
        name="k8s-a",
        connector="kueue",
        scheduler_settings={"host": kubernetes_api.url, "backoff": 0, "retries": 1, "lookback_seconds": lookback},
        enabled=True,
        gather_delay=0,
    )

    def poll():
        with django_capture_on_commit_callbacks(execute=True):
            found = discovery.cluster_poll(cluster_id=configured.pk)
        configured.refresh_from_db()
        return found

    poll.cluster = configured
    return poll


def test_kueue_workloads_are_discovered_gathered_and_diagnosed_once(kueue, bundle_root, tmp_path, exported_diagnosis):
    assert kueue() == 2

    attempts = {a.job.job_id: a for a in Attempt.objects.select_related("job", "current_diagnosis")}
    assert sorted(attempts) == ["ml/sweep", "ml/train"]
    train = attempts["ml/train"]
    assert (train.state, train.exit_code, train.analysis_state) == ("Failed", "137", "analysed")
    stored = bundle_root / train.bundle
    assert (stored / "logs" / "gpu-node-1" / "train-0-xk2p9.trainer.log").is_file()
    assert list((stored / "events").glob("*.json"))
    assert exported_diagnosis(train, tmp_path / "out") == train.current_diagnosis.document_json
    assert any("job-gone-3c4d5" in item for item in kueue.cluster.skipped)
    assert kueue() == 0


def test_an_api_server_that_fails_backs_discovery_off_and_a_recovery_resets_it(kueue, kubernetes_api):
    status = {"kind": "Status", "apiVersion": "v1", "status": "Failure", "message": "etcdserver: request timed out",
              "reason": "InternalError", "code": 500}  # fmt: skip
    kubernetes_api.faults = [(500, {}, status)] * 2

    assert kueue() is None
    assert "etcdserver: request timed out" in kueue.cluster.last_error
    assert kueue.cluster.last_error.endswith("(transient)")
    assert kueue.cluster.failures == 1

    kubernetes_api.faults = [(200, {}, b'{"apiVersion": "kueue.x-k8s.io/v1beta1", "items": [')] * 2
    assert kueue() is None
    assert kueue.cluster.failures == 2
    waited = (kueue.cluster.next_poll - kueue.cluster.last_poll).total_seconds()
    assert waited == 4 * kueue.cluster.poll_interval

    kubernetes_api.faults = []
    assert kueue() == 2
    assert (kueue.cluster.failures, kueue.cluster.last_error) == (0, "")
    assert Cluster.objects.get().last_found == 2


@pytest.fixture
def silent_server():
    """A TCP server on 127.0.0.1 that accepts every connection and never answers (finding 3): its URL."""
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.1)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept():
        while not stop.is_set():
            with contextlib.suppress(TimeoutError):
                held.append(server.accept()[0])

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.getsockname()[1]}"
    stop.set()
    thread.join()
    for connection in [*held, server]:
        connection.close()


def test_sources_that_never_answer_cost_one_deadline_then_their_circuit_is_open(
    silent_server, loki, folder_cluster, drop, make_bundle, settings, django_capture_on_commit_callbacks, client_for
):
    """Three sources that never answer, with the defaults that cost 4 tries x 30 s each (finding 3): the gathering
    ends at its deadline with the live Loki's logs and the diagnosis made; the dead sources are skipped next time
    (their circuit is open) and the clusters page says so."""
    settings.FAULTLINE_GATHER_DEADLINE = 4
    dead = {"url": silent_server, "queries": {"temp": "DCGM_FI_DEV_GPU_TEMP"}}  # default timeout and retries
    sources = [
        {"role": "metrics", "name": "prom-a", "kind": "prometheus", "settings": dead},
        {"role": "metrics", "name": "prom-b", "kind": "prometheus", "settings": dead},
        {"role": "logs", "name": "loki-dead", "kind": "loki", "settings": {"url": silent_server, "queries": {
            "kern": '{host="$node", job="kern"}'}}},
        {"role": "logs", "name": "loki", "kind": "loki", "settings": {"url": loki.url, "queries": {
            "kern": '{host="$node", job="kern"}'}}},
    ]  # fmt: skip
    cluster = folder_cluster(drop, sources=sources)

    def discover(job_id: str) -> tuple[Attempt, float]:
        make_bundle(root=drop, job_id=job_id)
        began = time.monotonic()
        with django_capture_on_commit_callbacks(execute=True):
            assert discovery.cluster_poll(cluster_id=cluster.pk) == 1
        attempt = Attempt.objects.select_related("current_diagnosis").get(job__job_id=job_id)
        return attempt, time.monotonic() - began

    first, took = discover("1")
    assert took < 4 + 5  # the deadline, and the rest of the work: not 3 x 127 s
    assert (first.analysis_state, first.current_diagnosis.subdomain) == ("analysed", "gpu.bus")
    reports = {(s["detail"].split(":")[0], s["status"]) for s in first.current_diagnosis.document["sources"]}
    assert {("prom-a", "error"), ("prom-b", "error"), ("loki-dead", "error"), ("loki", "ok")} <= reports
    assert all("deadline passed" in s.last_error for s in Source.objects.exclude(name="loki"))
    assert Source.objects.get(name="loki").failures == 0

    second, took = discover("2")
    assert took < 3  # the dead sources are not asked
    skipped = [s for s in second.current_diagnosis.document["sources"] if "not asked: it failed" in s["detail"]]
    assert sorted(s["name"] for s in skipped) == ["loki-dead", "prom-a", "prom-b"]

    page = client_for("viewer").get("/clusters/").content.decode()
    assert page.count("circuit open: skipped") == 3
