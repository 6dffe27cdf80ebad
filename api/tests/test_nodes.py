"""The node inventory and the drains in the API: each node with the attempts it ran, the verdicts naming it the root
cause and its active drain, filtered; every drain with who proposed it; a list costs the same few queries whatever
the number of nodes."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from access.roles import TRIAGER, VIEWER
from handoffs.models import Drain

pytestmark = pytest.mark.django_db


@pytest.fixture
def two_attempts(make_bundle, store):
    """Two attempts of node01-node04 on dgx-a whose GPU fell off the bus on node02."""
    return [store(make_bundle(job_id=job_id)) for job_id in ("1", "2")]


def test_nodes_with_their_attempts_root_causes_and_drain(two_attempts, api_client_for, person, settings):
    settings.FAULTLINE_REPEAT_OFFENDER_DAYS = 36500  # the bundles' attempts ended in 2026
    attempt = two_attempts[0]
    node02 = attempt.nodes.get(name="node02")
    drain = Drain.objects.create(cluster=attempt.cluster, node=node02, attempt=attempt, reason="xid 79",
                                 proposed_by=person(TRIAGER, "tess"))  # fmt: skip
    client = api_client_for(VIEWER)

    nodes = client.get("/api/v1/nodes").json()

    assert nodes["count"] == 4
    by_name = {node["name"]: node for node in nodes["results"]}
    assert [node["name"] for node in nodes["results"]] == ["node01", "node02", "node03", "node04"]
    assert {k: by_name["node02"][k] for k in ("cluster", "attempts", "root_causes", "recent_causes")} == {
        "cluster": "dgx-a", "attempts": 2, "root_causes": 2, "recent_causes": 2}  # fmt: skip
    assert by_name["node02"]["drain"] == {"id": drain.pk, "state": "proposed"}
    assert by_name["node02"]["last_end"].startswith("2026-11-02T10:30:00")
    assert by_name["node02"]["repeat_offender"] is (settings.FAULTLINE_REPEAT_OFFENDER_COUNT <= 2)
    assert (by_name["node01"]["root_causes"], by_name["node01"]["drain"]) == (0, None)
    assert [n["name"] for n in client.get("/api/v1/nodes?at_fault=true").json()["results"]] == ["node02"]
    assert [n["name"] for n in client.get("/api/v1/nodes?q=DE03&cluster=dgx-a").json()["results"]] == ["node03"]
    assert client.get("/api/v1/nodes?cluster=elsewhere").json()["count"] == 0
    assert client.get(f"/api/v1/nodes/{node02.pk}").json()["root_causes"] == 2

    drains = client.get("/api/v1/drains?active=true&node=node02").json()["results"]
    assert [(d["id"], d["node"], d["state"], d["proposed_by"], d["attempt"]) for d in drains] == [
        (drain.pk, "node02", "proposed", "tess", attempt.pk)]  # fmt: skip
    assert client.get("/api/v1/drains?state=drained").json()["count"] == 0
    assert client.post("/api/v1/drains", {"node": "node01"}).status_code == 405  # proposed on the pages


def test_a_page_of_nodes_costs_the_same_queries_whatever_their_number(two_attempts, api_client_for, make_bundle, store):
    client = api_client_for(VIEWER)
    with CaptureQueriesContext(connection) as few:
        client.get("/api/v1/nodes").json()
    store(make_bundle(job_id="3", nodes=tuple(f"node{i:02d}" for i in range(5, 40))))
    with CaptureQueriesContext(connection) as many:
        assert client.get("/api/v1/nodes").json()["count"] == 39
    assert len(many) == len(few)


def test_the_inventory_needs_a_sign_in(client):
    assert client.get("/api/v1/nodes").status_code in (401, 403)
    assert client.get("/api/v1/drains").status_code in (401, 403)
