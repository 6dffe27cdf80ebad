"""Discovery: polls store each attempt once, queue its gathering and analysis, advance the cursor, back off
a failing scheduler; gathered attempts become stored bundles; the Clusters page and API show the status."""

import json
from datetime import UTC, datetime, timedelta

import pytest
from django.utils import timezone

from access.roles import VIEWER
from diagnoses.models import Attempt, Cluster, Diagnosis
from diagnoses.services import attempts, discovery
from diagnoses.tasks import analyse_attempt, poll_clusters

pytestmark = pytest.mark.django_db


def test_a_poll_stores_each_new_attempt_once_and_it_is_gathered_and_diagnosed(
    drop, polled, bundle_root, make_bundle, folder_cluster
):
    cluster = folder_cluster(drop)
    make_bundle(root=drop, job_id="1")
    make_bundle(root=drop, job_id="2", faulty=None)

    assert polled(cluster) == 2

    attempts = {a.job.job_id: a for a in Attempt.objects.select_related("job", "current_diagnosis")}
    assert sorted(attempts) == ["1", "2"]
    first = attempts["1"]
    assert (first.analysis_state, first.current_diagnosis.subdomain) == ("analysed", "gpu.bus")
    assert first.discovery["bundle"].startswith(str(drop))
    assert first.gathered is not None
    stored = bundle_root / first.bundle
    assert sorted(p.relative_to(stored).as_posix() for p in stored.rglob("*.*")) == [
        "attempt.json",
        "history/attempts.json",
        "history/nodes.json",
        "logs/node01/syslog.log",
        "logs/node02/syslog.log",
        "logs/node03/syslog.log",
        "logs/node04/syslog.log",
        "logs/train.log",
    ]  # fmt: skip (history/: gathering writes it, docs/bundles.md)
    cluster.refresh_from_db()
    assert (cluster.last_found, cluster.failures, cluster.last_error, cluster.polling_since) == (2, 0, "", None)
    assert cluster.next_poll == cluster.last_poll + timedelta(seconds=60)
    assert sorted(json.loads(cluster.cursor)) == sorted(p.name for p in drop.iterdir())

    assert polled(cluster) == 0
    make_bundle(root=drop, job_id="1", attempt=1)  # the job requeued: a new attempt
    assert polled(cluster) == 1
    assert Attempt.objects.count() == 3
    assert Diagnosis.objects.count() == 3


def test_a_lost_cursor_finds_the_same_attempts_and_stores_none_twice(drop, polled, make_bundle, folder_cluster):
    cluster = folder_cluster(drop)
    make_bundle(root=drop, job_id="1")
    polled(cluster)
    Cluster.objects.filter(pk=cluster.pk).update(cursor="")

    assert polled(cluster) == 0
    assert Attempt.objects.count() == 1


def test_the_stored_bundle_is_the_source_of_truth(
    drop, polled, tmp_path, make_bundle, folder_cluster, exported_diagnosis, api_client_for
):
    cluster = folder_cluster(drop)
    original = make_bundle(root=drop)
    polled(cluster)
    attempt = Attempt.objects.get()
    for file in sorted(original.rglob("*"), reverse=True):  # the folder is emptied: nothing is read from it again
        file.unlink() if file.is_file() else file.rmdir()

    attempts.attempt_reanalyse(attempt=attempt)
    analyse_attempt.apply(args=[attempt.pk])
    attempt.refresh_from_db()

    assert attempt.analysis_state == "analysed"
    evidence = attempt.current_diagnosis.evidence.get(role="root_cause")
    lines = api_client_for(VIEWER).get(f"/api/v1/evidence/{evidence.pk}/excerpt", {"context": 0}).json()
    assert lines == [{"line": 3, "text": evidence.text}]
    assert exported_diagnosis(attempt, tmp_path / "out") == attempt.current_diagnosis.document_json


def test_an_attempt_uploaded_first_is_not_stored_again(drop, polled, make_bundle, folder_cluster):
    uploaded = attempts.attempt_ingest_directory(path=make_bundle(), analyse=False)
    cluster = folder_cluster(drop)
    make_bundle(root=drop)

    assert polled(cluster) == 0
    assert list(Attempt.objects.all()) == [uploaded]
    assert Attempt.objects.get().discovery is None


def test_records_discovery_cannot_use_are_listed_not_stored(drop, polled, make_bundle, folder_cluster):
    cluster = folder_cluster(drop)
    other = make_bundle(root=drop, cluster="elsewhere", job_id="7")
    broken = make_bundle(root=drop, job_id="8")
    (broken / "attempt.json").write_text("{")

    assert polled(cluster) == 0

    cluster.refresh_from_db()
    assert sorted(cluster.skipped) == sorted(
        [
            f"{other}: names cluster 'elsewhere'; this folder is 'dgx-a''s",
            f"{broken}: Expecting property name enclosed in double quotes: line 1 column 2 (char 1)",
        ]
    )
    assert not Attempt.objects.exists()


def test_a_failing_scheduler_backs_off_exponentially_up_to_the_cap_then_recovers(
    drop, polled, settings, folder_cluster
):
    settings.FAULTLINE_BACKOFF_MAX = 300
    cluster = folder_cluster(drop / "not-yet", poll_interval=60)
    (drop / "not-yet").rmdir()
    waits = []
    for _ in range(4):
        assert polled(cluster) is None
        cluster.refresh_from_db()
        waits.append((cluster.next_poll - cluster.last_poll).total_seconds())

    assert waits == [120, 240, 300, 300]
    assert cluster.failures == 4
    assert cluster.last_error == f"{drop / 'not-yet'}: watched folder is not a directory (permanent)"
    assert cluster.last_success is None

    (drop / "not-yet").mkdir()
    assert polled(cluster) == 0
    cluster.refresh_from_db()
    assert (cluster.failures, cluster.last_error) == (0, "")
    assert cluster.next_poll == cluster.last_poll + timedelta(seconds=60)


def test_each_beat_tick_queues_the_due_enabled_clusters_once(drop, django_capture_on_commit_callbacks, folder_cluster):
    due = folder_cluster(drop, name="due")
    later = folder_cluster(drop, name="later")
    Cluster.objects.filter(pk=later.pk).update(next_poll=timezone.now() + timedelta(minutes=5))
    folder_cluster(drop, name="off", enabled=False)
    Cluster.objects.create(name="uploads-only")

    with django_capture_on_commit_callbacks() as queued:
        assert poll_clusters.apply().get() == [due.pk]
        assert poll_clusters.apply().get() == []  # the next tick: its next poll moved on

    assert len(queued) == 1
    due.refresh_from_db()
    assert due.next_poll > timezone.now() + timedelta(seconds=55)


def test_a_cluster_being_polled_is_not_polled_again_until_that_poll_is_lost(
    drop, polled, settings, make_bundle, folder_cluster
):
    cluster = folder_cluster(drop)
    make_bundle(root=drop)
    Cluster.objects.filter(pk=cluster.pk).update(polling_since=timezone.now() - timedelta(seconds=10))

    assert polled(cluster) is None
    assert not Attempt.objects.exists()

    lost = timezone.now() - timedelta(seconds=settings.FAULTLINE_STUCK_AFTER + 1)
    Cluster.objects.filter(pk=cluster.pk).update(polling_since=lost)
    assert polled(cluster) == 1


def test_gathering_waits_the_clusters_gather_delay_after_the_attempt_ended(
    drop, monkeypatch, django_capture_on_commit_callbacks, make_bundle, folder_cluster
):
    queued = []
    monkeypatch.setattr(analyse_attempt, "apply_async", lambda args, countdown: queued.append((args, countdown)))
    cluster = folder_cluster(drop, gather_delay=120)
    ended = datetime.now(UTC) - timedelta(minutes=30, seconds=20)  # write_bundle's attempts last 30 minutes
    make_bundle(root=drop, job_id="recent", start=ended.replace(microsecond=0))
    make_bundle(root=drop, job_id="old")

    with django_capture_on_commit_callbacks(execute=True):
        discovery.cluster_poll(cluster_id=cluster.pk)

    countdowns = {Attempt.objects.get(pk=args[0]).job.job_id: countdown for args, countdown in queued}
    assert countdowns["old"] is None
    assert 90 < countdowns["recent"] <= 100


# -- the Clusters page and the API's status --


# -- Prometheus as a cluster's metric source --


@pytest.mark.prometheus
def test_a_discovered_attempt_is_diagnosed_from_prometheus_metrics(
    drop, polled, tmp_path, bundle_root, prometheus_url, make_bundle, folder_cluster, exported_diagnosis
):
    cluster = folder_cluster(drop, sources=[{"role": "metrics", "name": "prom", "kind": "prometheus",
                                             "settings": {"url": prometheus_url}}])  # fmt: skip
    start, end = datetime(2025, 6, 1, 10, 30, tzinfo=UTC), datetime(2025, 6, 1, 11, 30, tzinfo=UTC)  # the samples'
    bundle = make_bundle(root=drop, job_id="77", nodes=("node02",), faulty=None, start=start)
    record = json.loads((bundle / "attempt.json").read_text())
    (bundle / "attempt.json").write_text(json.dumps({**record, "end": end.isoformat()}))

    polled(cluster)

    attempt = Attempt.objects.get()
    diagnosis = attempt.current_diagnosis
    assert (diagnosis.outcome, diagnosis.subdomain, diagnosis.document["root_cause"]["nodes"]) == (
        "attributed", "gpu.bus", ["node02"])  # fmt: skip
    sources = {s["name"]: s["status"] for s in diagnosis.document["sources"]}
    assert (sources["xid"], sources["row_remap"], sources["metrics"]) == ("ok", "missing", "ok")
    assert (bundle_root / attempt.bundle / "metrics" / "xid.json").is_file()
    assert cluster.sources.get().last_ok is not None
    assert exported_diagnosis(attempt, tmp_path / "out") == diagnosis.document_json
