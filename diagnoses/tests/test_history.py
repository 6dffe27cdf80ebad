"""History in the bundle: gathering writes the store's verdicts of record of the attempt's nodes (in the window
before it started) and its job's previous attempts into ``history/``, and the rules weigh them."""

import json
from datetime import timedelta

import pytest

from diagnoses import bundle_store
from diagnoses.models import Attempt

pytestmark = pytest.mark.django_db


def test_a_requeue_gathered_onto_the_node_that_failed_before_is_ambiguous_with_it_leading(
    tmp_path, make_bundle, store, folder_cluster, polled, settings
):
    earlier = store(make_bundle(job_id="800", attempt=0))  # Xid 79 on node02
    assert list(earlier.verdict_nodes.values_list("name", flat=True)) == ["node02"]
    long_ago = store(make_bundle(job_id="790", faulty="node03", start=make_bundle.start - timedelta(days=20)))
    cluster = folder_cluster(tmp_path / "drop")
    make_bundle(
        root=tmp_path / "drop", job_id="800", attempt=1, faulty=None, start=make_bundle.start + timedelta(days=1)
    )
    assert polled(cluster) == 1
    requeue = Attempt.objects.get(job__job_id="800", number=1)
    history = bundle_store.path_of(requeue.bundle) / "history"
    nodes = json.loads((history / "nodes.json").read_text())
    assert nodes["window_days"] == settings.FAULTLINE_HISTORY_DAYS == 14
    assert [(v["node"], v["job_id"], v["attempt"], v["domain"], v["subdomain"], v["reviewed"])
            for v in nodes["verdicts"]] == [("node02", "800", 0, "hardware", "gpu.bus", False)]  # fmt: skip
    assert long_ago.end < requeue.start - timedelta(days=14)  # node03's verdict is past the window
    attempts = json.loads((history / "attempts.json").read_text())
    assert [(a["attempt"], a["outcome"], a["nodes"]) for a in attempts] == [(0, "attributed", ["node02"])]

    document = requeue.current_diagnosis.document
    assert document["outcome"] == "ambiguous"
    assert (document["candidates"][0]["rule"], document["candidates"][0]["nodes"]) == (
        "history.hardware_before",
        ["node02"],
    )
    assert any(item["source"] == "history" and "800#0" in item["text"] for item in document["evidence"])


@pytest.fixture
def failed_before(make_bundle, store):
    """Job 800's first attempt: Xid 79 on node02, its verdict of record."""
    return store(make_bundle(job_id="800", attempt=0))


def test_an_uploaded_requeue_asked_for_its_history_is_ambiguous_with_the_node_leading(
    failed_before, make_bundle, tar_gz, api_client_for
):
    from access.roles import TRIAGER
    from diagnoses.services import analysis

    triager = api_client_for(TRIAGER)
    requeue = tar_gz(make_bundle(job_id="800", attempt=1, faulty=None, start=make_bundle.start + timedelta(days=1)))
    response = triager.post("/api/v1/attempts?history=true", data=requeue, content_type="application/gzip")
    assert response.status_code == 202
    attempt = Attempt.objects.get(pk=response.json()["id"])
    nodes = json.loads(bundle_store.open_file(attempt.bundle, "history/nodes.json").read())
    assert [(v["node"], v["job_id"], v["attempt"]) for v in nodes["verdicts"]] == [("node02", "800", 0)]
    attempts = json.loads(bundle_store.open_file(attempt.bundle, "history/attempts.json").read())
    assert [(a["attempt"], a["outcome"], a["nodes"]) for a in attempts] == [(0, "attributed", ["node02"])]
    analysis.attempt_analyse(attempt_id=attempt.pk)
    document = Attempt.objects.get(pk=attempt.pk).current_diagnosis.document
    assert document["outcome"] == "ambiguous"
    assert (document["candidates"][0]["rule"], document["candidates"][0]["nodes"]) == (
        "history.hardware_before",
        ["node02"],
    )


def test_an_upload_without_the_flag_or_with_its_own_history_keeps_the_bundle_as_it_came(
    failed_before, make_bundle, store
):
    from diagnoses.services import attempts

    later = make_bundle.start + timedelta(days=1)
    plain = store(make_bundle(job_id="800", attempt=1, faulty=None, start=later))
    assert bundle_store.open_file(plain.bundle, "history/nodes.json") is None
    assert plain.current_diagnosis.outcome == "unattributed"  # today's diagnosis: no history, no candidate

    own = make_bundle(job_id="800", attempt=2, faulty=None, start=later + timedelta(hours=1))
    (own / "history").mkdir()
    (own / "history" / "nodes.json").write_text('{"window_days": 3, "verdicts": []}')
    kept = attempts.attempt_ingest_directory(path=own, analyse=False, history=True)
    assert json.loads(bundle_store.open_file(kept.bundle, "history/nodes.json").read()) == {
        "window_days": 3, "verdicts": []
    }  # fmt: skip
    assert bundle_store.open_file(kept.bundle, "history/attempts.json") is None


def test_the_history_parameter_must_be_a_boolean(api_client_for, make_bundle, tar_gz):
    from access.roles import TRIAGER

    response = api_client_for(TRIAGER).post(
        "/api/v1/attempts?history=maybe", data=tar_gz(make_bundle(job_id="801")), content_type="application/gzip"
    )
    assert response.status_code == 400
    assert "history" in response.content.decode()
    assert "must be true or false, not 'maybe'" in response.content.decode()
    assert not Attempt.objects.exists()


def test_ingest_writes_the_history_when_asked(failed_before, make_bundle):
    from django.core.management import call_command

    later = make_bundle.start + timedelta(days=1)
    call_command("ingest", str(make_bundle(job_id="800", attempt=1, start=later)), "--no-analyse", "--history",
                 verbosity=0)  # fmt: skip
    requeue = Attempt.objects.get(job__job_id="800", number=1)
    attempts = json.loads(bundle_store.open_file(requeue.bundle, "history/attempts.json").read())
    assert [(a["attempt"], a["domain"], a["subdomain"]) for a in attempts] == [(0, "hardware", "gpu.bus")]
