"""The Clusters page: where each cluster's discovery stands and the health of its sources, refreshed by htmx."""

import re

import pytest

from access.roles import VIEWER
from diagnoses.models import Cluster

pytestmark = pytest.mark.django_db


@pytest.fixture
def signed_in(client_for):
    return client_for(VIEWER)


def test_the_clusters_page_needs_a_login(client):
    response = client.get("/clusters/")
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/")


def test_the_clusters_page_shows_discovery_and_source_health(drop, polled, signed_in, make_bundle, folder_cluster):
    cluster = folder_cluster(drop, sources=[{"role": "logs", "name": "syslog", "kind": "logfiles",
                                             "settings": {"paths": {"syslog": "/nowhere/{node}"}}}])  # fmt: skip
    make_bundle(root=drop)
    polled(cluster)
    broken = folder_cluster(drop / "gone", name="dgx-b")
    (drop / "gone").rmdir()
    polled(broken)
    Cluster.objects.filter(pk=broken.pk).update(last_error="<script>alert(1)</script> sacct failed")
    Cluster.objects.create(name="uploads-only")

    page = signed_in.get("/clusters/").text

    assert '<a href="/clusters/" aria-current="page">Clusters</a>' in page
    rows = re.findall(r'<th scope="row">(.*?)</th>.*?<span class="badge state-(\w+)">', page, re.S)
    assert rows == [("dgx-a", "ok"), ("dgx-b", "backing_off"), ("uploads-only", "uploads")]
    assert "1 failed poll in a row" in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt; sacct failed" in page
    assert "<script>alert(1)" not in page
    assert "syslog</strong> <code>logfiles</code>" in page


def test_htmx_refreshes_the_table_alone(drop, signed_in, folder_cluster):
    folder_cluster(drop)

    response = signed_in.get("/clusters/", HTTP_HX_REQUEST="true", HTTP_HX_TARGET="cluster-status")  # as htmx sends it

    assert response.text.startswith('<div id="cluster-status"')
    assert "<html" not in response.text
    assert "HX-Request" in response["Vary"]


def test_the_clusters_page_queries_do_not_grow_with_the_clusters(
    drop, signed_in, django_assert_max_num_queries, folder_cluster
):
    source = {"role": "metrics", "name": "prom", "kind": "prometheus", "settings": {"url": "http://p"}}
    folder_cluster(drop, sources=[source])
    with django_assert_max_num_queries(6) as one:
        signed_in.get("/clusters/")
    for name in ("b", "c", "d"):
        folder_cluster(drop, name=name, sources=[source])
    with django_assert_max_num_queries(len(one.captured_queries)):
        assert signed_in.get("/clusters/").text.count('scope="row"') == 4
