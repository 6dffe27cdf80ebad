"""Discovery driven by a real Celery worker with its beat: the schedule polls an enabled cluster (a watched
folder) at its interval, and what each poll finds is gathered and diagnosed by the worker.

Needs PostgreSQL (shared with the worker) and Redis (the broker: ``FAULTLINE_TEST_DISCOVERY_BROKER_URL``,
default ``redis://127.0.0.1:6379/9``, flushed by the test).
"""

import os

import pytest
import redis
from django.db import connection

from diagnoses.models import Attempt, Cluster
from diagnoses.tests.workers import database_url, kill, start_worker, wait_for

pytestmark = pytest.mark.django_db(transaction=True)
BROKER = os.environ.get("FAULTLINE_TEST_DISCOVERY_BROKER_URL", "redis://127.0.0.1:6379/9")


@pytest.fixture
def worker(tmp_path, bundle_root):
    if connection.vendor != "postgresql":
        pytest.skip("the worker shares the test database with this test: it needs PostgreSQL")
    redis.Redis.from_url(BROKER).flushdb()
    environment = {
        "PATH": os.environ["PATH"],
        "DATABASE_URL": database_url(),
        "CELERY_BROKER_URL": BROKER,
        "FAULTLINE_BUNDLE_ROOT": str(bundle_root),
        "FAULTLINE_VAR_DIR": str(tmp_path / "var"),
        "FAULTLINE_DISCOVERY_TICK": "1",
    }
    process = start_worker("discovery", environment, tmp_path)
    yield process
    kill(process)  # the worker and its beat


def test_beat_polls_the_cluster_at_its_interval_and_the_worker_diagnoses_what_it_finds(
    tmp_path, worker, make_bundle, folder_cluster
):
    drop = tmp_path / "drop"
    cluster = folder_cluster(drop, poll_interval=10)
    make_bundle(root=drop, job_id="1")

    wait_for(lambda: Attempt.objects.filter(analysis_state="analysed").count() == 1, 60, "the first poll's attempt")
    first = Cluster.objects.get(pk=cluster.pk).last_success
    make_bundle(root=drop, job_id="2")

    wait_for(lambda: Attempt.objects.filter(analysis_state="analysed").count() == 2, 60, "the next poll's attempt")
    cluster.refresh_from_db()
    assert 9 <= (cluster.last_success - first).total_seconds() < 30  # the next poll came at the cluster's interval
    assert sorted(Attempt.objects.values_list("job__job_id", "current_diagnosis__subdomain")) == [
        ("1", "gpu.bus"),
        ("2", "gpu.bus"),
    ]
    assert Attempt.objects.filter(gathered__isnull=False).count() == 2
