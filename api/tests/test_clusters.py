"""Clusters in the API: admins configure them (every problem named by field and setting), everyone signed
in reads their configuration and the status of their discovery."""

import pytest

from access.roles import ADMIN, TRIAGER, VIEWER
from api.tests.errors import error
from diagnoses.models import Cluster
from diagnoses.services import clusters

pytestmark = pytest.mark.django_db

PROMETHEUS = {"role": "metrics", "name": "prom", "kind": "prometheus", "settings": {"url": "http://prom:9090"}}
SYSLOG = {"role": "logs", "name": "syslog", "kind": "logfiles", "settings": {"paths": {"syslog": "/srv/{node}/syslog"}}}


def test_admins_configure_clusters_through_the_api_and_everyone_signed_in_reads_them(api_client_for):
    admin = api_client_for(ADMIN)
    body = {"name": "dgx-a", "connector": "slurm", "scheduler_settings": {"command_prefix": ["ssh", "dgx-login"]},
            "enabled": True, "poll_interval": 120, "sources": [SYSLOG, PROMETHEUS]}  # fmt: skip

    created = admin.post("/api/v1/clusters", body, format="json")

    assert created.status_code == 201, created.content
    document = created.json()
    assert {k: document[k] for k in body} == body
    assert document["status"]["state"] == "new"
    assert document["status"]["sources"][0] == {
        "name": "syslog", "role": "logs", "kind": "logfiles", "state": "unused", "failures": 0, "last_error": "",
        "last_failure": None, "last_ok": None, "retry_after": None,
    }  # fmt: skip
    read = api_client_for(VIEWER).get(f"/api/v1/clusters/{document['id']}").json()
    assert read["sources"] == body["sources"]

    changed = admin.patch(f"/api/v1/clusters/{document['id']}", {"enabled": False}, format="json")
    assert changed.status_code == 200
    assert changed.json()["status"]["state"] == "disabled"
    assert changed.json()["sources"] == body["sources"]  # left out of a PATCH: kept


@pytest.mark.parametrize(
    ("body", "field", "message"),
    [
        ({"scheduler_settings": {"path_map": ["/home"]}}, "scheduler_settings.path_map",
         "dgx-a: setting 'path_map' must be an object mapping names to strings"),
        ({"sources": [PROMETHEUS, {**SYSLOG, "settings": {"paths": {"syslog": 7}}}]}, "sources.1.settings.paths",
         "syslog: setting 'paths' must be an object mapping names to strings"),
        ({"sources": [{**PROMETHEUS, "settings": {"url": "http://p", "password": "pw"}}]},
         "sources.0.settings.password", "prom: setting 'password' must not hold a secret: name an environment "
         "variable (password_env) or a file (password_file) that holds it"),
        ({"connector": "os.system"}, "connector", "'os.system' is not a scheduler connector here"),
        ({"connector": "uploads", "sources": [SYSLOG]}, "sources.0",
         "a cluster without a scheduler gathers nothing"),
    ],
)  # fmt: skip
def test_a_bad_configuration_is_an_api_error_naming_the_field_and_setting(body, field, message, api_client_for):
    response = api_client_for(ADMIN).post(
        "/api/v1/clusters", {"name": "dgx-a", "connector": "slurm", **body}, format="json"
    )

    assert response.status_code == 400
    problem = error(response)
    assert (problem["code"] in ("invalid", "invalid_setting"), problem["field"]) == (True, field)
    assert problem["message"].startswith(message)
    assert not Cluster.objects.exists()


@pytest.mark.parametrize("role", [VIEWER, TRIAGER])
def test_only_admins_change_clusters(role, api_client_for):
    cluster = clusters.cluster_configure(name="dgx-a", connector="slurm", enabled=True)
    client = api_client_for(role)

    assert client.post("/api/v1/clusters", {"name": "x", "connector": "slurm"}, format="json").status_code == 403
    assert client.patch(f"/api/v1/clusters/{cluster.pk}", {"enabled": False}, format="json").status_code == 403
    assert client.post(f"/api/v1/clusters/{cluster.pk}/poll").status_code == 403
    assert client.delete(f"/api/v1/clusters/{cluster.pk}").status_code in (403, 405)
    assert Cluster.objects.get().enabled


def test_the_api_shows_the_status_and_an_admin_polls_now(
    tmp_path, django_capture_on_commit_callbacks, make_bundle, folder_cluster, api_client_for
):
    cluster = folder_cluster(tmp_path / "drop")
    make_bundle(root=tmp_path / "drop")

    with django_capture_on_commit_callbacks(execute=True):
        response = api_client_for(ADMIN).post(f"/api/v1/clusters/{cluster.pk}/poll")
        assert response.status_code == 202

    status = api_client_for(VIEWER).get(f"/api/v1/clusters/{cluster.pk}").json()["status"]
    assert (status["state"], status["last_found"], status["failures"], status["pending"]) == ("ok", 1, 0, 0)
    assert 0 <= status["lag_seconds"] < 60
    uploads = Cluster.objects.create(name="uploads-only")
    refused = api_client_for(ADMIN, "second-admin").post(f"/api/v1/clusters/{uploads.pk}/poll")
    assert refused.status_code == 400
    assert refused.json()["error"]["field"] == "connector"
