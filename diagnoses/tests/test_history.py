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
