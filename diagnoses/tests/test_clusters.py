"""Configuring clusters (service, admin, API, command): settings checked by the connectors' own reader,
problems named by field and setting, secrets never stored, only allowed connector kinds."""

import json

import pytest
from django.contrib.auth.models import Group, User
from django.core.exceptions import ValidationError
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client
from django.utils import timezone

from access.roles import ADMIN
from diagnoses.models import Cluster, Source
from diagnoses.services import clusters

pytestmark = pytest.mark.django_db
PROMETHEUS = {"role": "metrics", "name": "prom", "kind": "prometheus", "settings": {"url": "http://prom:9090"}}
SYSLOG = {"role": "logs", "name": "syslog", "kind": "logfiles", "settings": {"paths": {"syslog": "/srv/{node}/syslog"}}}


def configure(**fields) -> Cluster:
    values = {"name": "dgx-a", "connector": "slurm", "scheduler_settings": {}, "enabled": True, **fields}
    return clusters.cluster_configure(**values)


def problems(**fields) -> dict[str, list[str]]:
    with pytest.raises(ValidationError) as caught:
        configure(**fields)
    return caught.value.message_dict


def test_a_cluster_is_configured_with_its_scheduler_and_sources():
    cluster = configure(scheduler_settings={"path_map": {"/home": "/mnt/home"}}, sources=[SYSLOG, PROMETHEUS])

    assert (cluster.connector, cluster.scheduler_settings, cluster.enabled) == (
        "slurm",
        {"path_map": {"/home": "/mnt/home"}},
        True,
    )
    assert [(s.role, s.name, s.kind, s.position) for s in cluster.sources.order_by("position")] == [
        ("logs", "syslog", "logfiles", 0),
        ("metrics", "prom", "prometheus", 1),
    ]


@pytest.mark.parametrize(
    ("fields", "field", "message"),
    [
        ({"scheduler_settings": {"path_map": ["/home"]}}, "scheduler_settings",
         "dgx-a: setting 'path_map' must be an object mapping names to strings"),
        ({"scheduler_settings": {"comand_prefix": ["ssh"]}}, "scheduler_settings",
         "dgx-a: setting 'comand_prefix' is not a setting of this connector"),
        ({"scheduler_settings": {"flight_recorder_path": "/lustre/fr/{jobid}"}}, "scheduler_settings",
         "dgx-a: setting 'flight_recorder_path' names {jobid}, which is not one of {job_id}, {name}, {node}, {user}, "
         "{workdir}"),
        ({"scheduler_settings": {"token": "s3cret"}}, "scheduler_settings",
         "dgx-a: setting 'token' must not hold a secret: name an environment variable (token_env) or a file "
         "(token_file) that holds it"),
        ({"scheduler_settings": {"cluster": "other"}}, "scheduler_settings",
         "leave out the setting 'cluster': the scheduler gets the cluster's name"),
        ({"scheduler_settings": ["not", "an", "object"]}, "scheduler_settings",
         "dgx-a: settings must be a JSON object"),
        ({"connector": "lsf"}, "connector",
         "'lsf' is not a scheduler connector here (choose slurm, kueue, folder, demo)"),
        ({"connector": "logfiles"}, "connector", "'logfiles' is not a scheduler connector here"),
        ({"connector": "builtins.exec"}, "connector", "'builtins.exec' is not a scheduler connector here"),
        ({"connector": "uploads", "enabled": True}, "enabled", "discovery needs a scheduler"),
        ({"poll_interval": 5}, "poll_interval", "Ensure this value is greater than or equal to 10."),
        ({"sources": [{**PROMETHEUS, "settings": {"url": "prom:9090"}}]}, "sources.0.settings",
         "prom: setting 'url' must start with http:// or https://"),
        ({"sources": [{**PROMETHEUS, "settings": {"url": "https://u:pw@prom"}}]}, "sources.0.settings",
         "prom: setting 'url' must not hold a password in the URL"),
        ({"sources": [{**PROMETHEUS, "settings": {"url": "http://p", "headers": {"Authorization": "Bearer x"}}}]},
         "sources.0.settings", "prom: setting 'headers.Authorization' must not hold a secret"),
        ({"sources": [{**SYSLOG, "kind": "prometheus"}]}, "sources.0.kind",
         "'prometheus' is not a logs connector here"),
        ({"sources": [SYSLOG, {**PROMETHEUS, "name": "syslog"}]}, "sources.1.name", "a second source named 'syslog'"),
        ({"sources": [{**PROMETHEUS, "role": "traces"}]}, "sources.0.role", "Value 'traces' is not a valid choice."),
    ],
)  # fmt: skip
def test_a_bad_configuration_is_refused_naming_the_field_and_setting(fields, field, message):
    found = problems(**fields)

    assert field in found
    assert any(text.startswith(message) for text in found[field]), found
    assert not Cluster.objects.exists()


def test_every_problem_is_reported_at_once():
    found = problems(
        scheduler_settings={"states": 3},
        sources=[{**SYSLOG, "settings": {}}, {**PROMETHEUS, "settings": {"url": "http://p", "step_seconds": 0}}],
    )

    assert set(found) == {"scheduler_settings", "sources.0.settings", "sources.1.settings"}


def test_a_secret_named_by_an_unset_environment_variable_is_refused(monkeypatch):
    loki = {"role": "logs", "name": "loki", "kind": "loki", "settings": {"url": "http://loki:3100",
            "queries": {"syslog": '{host="$node"}'}, "token_env": "FAULTLINE_TEST_LOKI_TOKEN"}}  # fmt: skip
    monkeypatch.delenv("FAULTLINE_TEST_LOKI_TOKEN", raising=False)

    assert problems(sources=[loki])["sources.0.settings"] == [
        "loki: setting 'token_env' names the environment variable FAULTLINE_TEST_LOKI_TOKEN, which is not set"
    ]

    monkeypatch.setenv("FAULTLINE_TEST_LOKI_TOKEN", "s3cret")
    cluster = configure(sources=[loki])
    stored = json.dumps(list(Source.objects.filter(cluster=cluster).values_list("settings", flat=True)))
    assert "s3cret" not in stored


def test_a_cluster_without_a_scheduler_takes_no_settings_or_sources():
    assert "scheduler_settings" in problems(connector="uploads", enabled=False, scheduler_settings={"a": 1})
    assert problems(connector="uploads", enabled=False, sources=[SYSLOG])["sources.0.__all__"][0].startswith(
        "a cluster without a scheduler gathers nothing"
    )


def test_the_old_names_of_connectors_are_accepted_and_stored_under_the_new_ones():
    cluster = configure(
        connector="bundles", scheduler_settings={"path": "/srv/drop"}, sources=[{**SYSLOG, "kind": "files"}]
    )
    assert (cluster.connector, cluster.sources.get().kind) == ("folder", "logfiles")

    uploads = configure(name="lab", connector="localfiles", enabled=False)
    assert (uploads.connector, uploads.has_scheduler) == ("uploads", False)


def test_the_migration_renames_stored_connectors_and_back(migrator_of):
    old = migrator_of(("diagnoses", "0004_page_indexes"))
    cluster = old.Cluster.objects.create(name="lab", connector="localfiles")
    folder = old.Cluster.objects.create(name="drop", connector="bundles", scheduler_settings={"path": "/srv/drop"})
    old.Source.objects.create(cluster_id=folder.pk, role="logs", name="syslog", kind="files", settings={})

    new = migrator_of(("diagnoses", "0005_connector_names"))
    assert dict(new.Cluster.objects.values_list("name", "connector")) == {"lab": "uploads", "drop": "folder"}
    assert list(new.Source.objects.values_list("kind", flat=True)) == ["logfiles"]

    back = migrator_of(("diagnoses", "0004_page_indexes"))
    assert back.Cluster.objects.get(pk=cluster.pk).connector == "localfiles"
    assert list(back.Source.objects.values_list("kind", flat=True)) == ["files"]


def test_dotted_paths_are_allowed_only_when_the_deployment_lists_them(settings):
    assert "connector" in problems(connector="connectors.slurm.scheduler.SlurmScheduler")

    settings.FAULTLINE_CONNECTOR_PATHS = [
        "connectors.slurm.scheduler.SlurmScheduler",
        "connectors.logfiles.LogFileSource",
    ]

    assert configure(connector="connectors.slurm.scheduler.SlurmScheduler").pk
    assert problems(name="x", connector="connectors.logfiles.LogFileSource")["connector"] == [
        "'connectors.logfiles.LogFileSource' is not a scheduler connector (it lacks discover, attempt_context)"
    ]


def test_changing_the_configuration_keeps_discovery_state_and_source_health_unless_their_connector_changed():
    cluster = configure(sources=[SYSLOG, PROMETHEUS])
    later = timezone.now()
    Cluster.objects.filter(pk=cluster.pk).update(cursor="2026-11-02T10:00:00Z", failures=2, next_poll=later)
    Source.objects.filter(cluster=cluster).update(failures=3, retry_after=later)
    cluster.refresh_from_db()

    clusters.cluster_configure(cluster=cluster, poll_interval=60, sources=[PROMETHEUS, SYSLOG])
    cluster.refresh_from_db()
    assert (cluster.poll_interval, cluster.cursor, cluster.failures, cluster.next_poll) == (
        60, "2026-11-02T10:00:00Z", 2, later)  # fmt: skip
    assert list(cluster.sources.values_list("name", "position", "failures")) == [("syslog", 1, 3), ("prom", 0, 3)]

    fixed = {**PROMETHEUS, "settings": {"url": "http://prom2:9090"}}
    clusters.cluster_configure(cluster=cluster, scheduler_settings={"command_timeout": 30}, sources=[fixed])
    cluster.refresh_from_db()
    assert (cluster.cursor, cluster.failures, cluster.next_poll) == ("2026-11-02T10:00:00Z", 0, None)
    assert list(cluster.sources.values_list("name", "failures", "retry_after")) == [("prom", 0, None)]

    clusters.cluster_configure(cluster=cluster, connector="folder", scheduler_settings={"path": "/srv/drop"})
    cluster.refresh_from_db()
    assert cluster.cursor == ""  # another scheduler's cursor means nothing to this one


# -- admin --


@pytest.fixture
def admin_client():
    user = User.objects.create_user("boss", password="x", is_staff=True)
    user.groups.add(Group.objects.get(name=ADMIN))
    client = Client()
    client.force_login(user)
    return client


def admin_form(**fields) -> dict:
    form = {"name": "dgx-a", "connector": "slurm", "scheduler_settings": "{}", "enabled": "on", "poll_interval": "300",
            "gather_delay": "60", "sources-TOTAL_FORMS": "0", "sources-INITIAL_FORMS": "0"}  # fmt: skip
    return {**form, **fields}


def test_the_admin_shows_a_bad_setting_on_its_field(admin_client):
    response = admin_client.post(
        "/admin/diagnoses/cluster/add/",
        admin_form(
            **{
                "sources-TOTAL_FORMS": "1",
                "sources-0-role": "logs",
                "sources-0-name": "loki",
                "sources-0-kind": "loki",
                "sources-0-settings": json.dumps({"url": "http://loki:3100", "queries": {"syslog": '{job="x"}'}}),
                "sources-0-position": "0",
            }  # fmt: skip
        ),
    )

    assert response.status_code == 200
    assert "loki: setting &#x27;queries&#x27; template &#x27;syslog&#x27; must use $node or $nodes" in response.text
    assert not Cluster.objects.exists()


def test_the_admin_saves_the_configuration_only(admin_client):
    cluster = configure(sources=[SYSLOG])
    source = cluster.sources.get()
    Cluster.objects.filter(pk=cluster.pk).update(cursor="polled meanwhile", failures=1)
    form = admin_form(
        poll_interval="600",
        **{"sources-TOTAL_FORMS": "1", "sources-INITIAL_FORMS": "1", "sources-0-id": str(source.pk),
           "sources-0-cluster": str(cluster.pk), "sources-0-role": "logs", "sources-0-name": "syslog",
           "sources-0-kind": "logfiles", "sources-0-settings": json.dumps(SYSLOG["settings"]),
           "sources-0-position": "0"},
    )  # fmt: skip

    response = admin_client.post(f"/admin/diagnoses/cluster/{cluster.pk}/change/", form)

    assert response.status_code == 302, response.text
    cluster.refresh_from_db()
    assert (cluster.poll_interval, cluster.cursor, cluster.failures) == (600, "polled meanwhile", 1)


# -- command --


def test_the_cluster_command_adds_a_cluster_and_names_what_is_wrong(capsys):
    with pytest.raises(CommandError, match="sources.0.settings: prom: setting 'url' must start with http"):
        call_command("cluster", "add", "dgx-a", "slurm", "--metrics", "prom", "prometheus", '{"url": "prom"}')
    with pytest.raises(CommandError, match="settings must be a JSON object"):
        call_command("cluster", "add", "dgx-a", "slurm", "[]")

    call_command(  # "files" is the old name of "logfiles"
        "cluster", "add", "dgx-a", "slurm", '{"command_prefix": ["ssh", "dgx-login"]}', "--interval", "120",
        "--logs", "syslog", "files", json.dumps(SYSLOG["settings"]),
        "--metrics", "prom", "prometheus", json.dumps(PROMETHEUS["settings"]),
    )  # fmt: skip

    assert "dgx-a: slurm with 2 source(s), discovery on" in capsys.readouterr().out
    cluster = Cluster.objects.get()
    assert (cluster.poll_interval, cluster.scheduler_settings) == (120, {"command_prefix": ["ssh", "dgx-login"]})
    assert list(cluster.sources.values_list("role", "name", "kind")) == [
        ("logs", "syslog", "logfiles"),
        ("metrics", "prom", "prometheus"),
    ]
    call_command("cluster", "list")
    assert capsys.readouterr().out.splitlines() == [
        "dgx-a\tslurm\tnew\tlast success never\tfound 0\tqueued 0\tfailed 0",
        "  logs syslog (logfiles): unused",
        "  metrics prom (prometheus): unused",
    ]
