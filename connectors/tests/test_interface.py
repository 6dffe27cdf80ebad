"""The connector interface: the registry of kinds, settings, the HTTP client's retries, gather."""

from __future__ import annotations

import json
import re
import time
from datetime import UTC, datetime

import pytest

from connectors.base import (
    ALIASES,
    KINDS,
    ConnectorError,
    DiscoveredAttempt,
    LogSource,
    MetricSource,
    Scheduler,
    build,
    canonical_kind,
    connector_class,
)
from connectors.gather import gather
from connectors.http_client import HttpClient
from connectors.settings_reader import SettingError, Settings
from connectors.tests.http_double import HttpDouble
from engine.context import Attempt, AttemptContext, LogStream, SourceReport

START = datetime(2026, 11, 2, 10, 0, tzinfo=UTC)
END = datetime(2026, 11, 2, 11, 0, tzinfo=UTC)
ATTEMPT = Attempt(
    cluster="dgx",
    scheduler="slurm",
    job_id="5",
    attempt=1,
    nodes=("node01", "node02"),
    start=START,
    end=END,
    state="FAILED",
    exit_code="1:0",
    ranks={0: "node01", 1: "node02"},
)


# -- registry --

SETTINGS = {
    "slurm": {"cluster": "c"},
    "kueue": {"cluster": "c", "host": "http://127.0.0.1:1"},
    "folder": {"path": "/tmp"},
    "demo": {"path": "/tmp"},
    "logfiles": {"paths": {"syslog": "/var/log/{node}/syslog"}},
    "loki": {"url": "http://127.0.0.1:1", "queries": {"syslog": '{host="$node"}'}},
    "prometheus": {"url": "http://127.0.0.1:1"},
}


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_every_registered_kind_builds_and_has_its_role(kind):
    role = KINDS[kind][0]
    connector = build(kind, f"my-{kind}", SETTINGS[kind], role=role)
    assert connector.name == f"my-{kind}"
    assert isinstance(connector, {"scheduler": Scheduler, "logs": LogSource, "metrics": MetricSource}[role])


def test_unknown_kinds_and_wrong_roles_are_permanent_errors():
    with pytest.raises(ConnectorError, match="unknown connector kind 'lsf'"):
        build("lsf", "x", {}, role="scheduler")
    with pytest.raises(ConnectorError, match="cannot import"):
        build("connectors.nothing.Here", "x", {}, role="logs")
    with pytest.raises(ConnectorError, match="builtins.exec is not a class"):
        build("builtins.exec", "print('never run')", {}, role="logs")
    with pytest.raises(ConnectorError, match="is not a scheduler connector"):
        build("logfiles", "x", SETTINGS["logfiles"], role="scheduler")


@pytest.mark.parametrize(("old", "new"), sorted(ALIASES.items()))
def test_the_old_names_of_kinds_build_the_same_connectors(old, new):
    assert canonical_kind(old) == new
    assert type(build(old, "x", SETTINGS[new], role=KINDS[new][0])) is connector_class(new)


def test_a_discovered_attempt_round_trips_through_json():
    discovered = DiscoveredAttempt(attempt=ATTEMPT, extra={"stdout": "/jobs/5.out"})
    document = json.loads(json.dumps(discovered.to_dict()))
    assert document["start"] == "2026-11-02T10:00:00Z"
    assert DiscoveredAttempt.from_dict(document) == discovered


# -- settings --


def test_settings_read_types_secrets_and_reject_unknown_keys(tmp_path, monkeypatch):
    secret = tmp_path / "token"
    secret.write_text("s3cret\n")
    monkeypatch.setenv("FAULTLINE_TEST_PASSWORD", "pw")
    reader = Settings("loki", {"limit": 10, "token_file": str(secret), "password_env": "FAULTLINE_TEST_PASSWORD"})
    assert reader.integer("limit", 5) == 10
    assert reader.secret("token") == "s3cret"
    assert reader.secret("password") == "pw"
    reader.finish()
    with pytest.raises(ConnectorError, match="setting 'limit' must be an integer of at least 1"):
        Settings("loki", {"limit": "10"}).integer("limit", 5, minimum=1)
    with pytest.raises(SettingError, match="setting 'token_env' names the environment variable FAULTLINE_TEST_UNSET, "
                       "which is not set") as caught:  # fmt: skip
        Settings("loki", {"token_env": "FAULTLINE_TEST_UNSET"}).secret("token")
    assert caught.value.permanent
    assert caught.value.setting == "token_env"
    with pytest.raises(ConnectorError, match="'urll' is not a setting"):
        Settings("loki", {"urll": "x"}).finish()


@pytest.mark.parametrize(
    ("values", "setting", "problem"),
    [
        ({"token": "plain"}, "token", "must not hold a secret: name an environment variable (token_env)"),
        ({"password": "pw", "username": "u"}, "password", "(password_env) or a file (password_file)"),
        ({"api_key": "k"}, "api_key", "must not hold a secret"),
        ({"headers": {"X-Api-Key": "k"}}, "headers.X-Api-Key", "use token_env or token_file"),
        ({"headers": {"Authorization": "Bearer k"}}, "headers.Authorization", "must not hold a secret"),
        ({"url": "https://u:pw@loki.example.org"}, "url", "must not hold a password in the URL"),
    ],
)
def test_a_setting_holding_a_secret_is_refused_by_name(values, setting, problem):
    with pytest.raises(SettingError, match=re.escape(problem)) as caught:
        Settings("loki", values)
    assert caught.value.setting == setting
    assert f"setting {setting!r}" in str(caught.value)


def test_secrets_named_by_variable_or_file_and_plain_settings_pass():
    values = {"token_env": "T", "password_file": "/run/secrets/pw", "tenant": "hpc", "url": "https://u@loki",
              "headers": {"X-Scope-OrgID": "hpc"}, "tail_lines": 5}  # fmt: skip
    assert Settings("loki", values).values == values


# -- HTTP client --


@pytest.fixture
def api():
    answers = []
    double = HttpDouble(lambda request: answers.pop(0))
    double.answers = answers
    yield double
    double.close()


def test_http_retries_transient_failures_with_backoff_and_sends_credentials(api, monkeypatch):
    monkeypatch.setenv("FAULTLINE_TEST_TOKEN", "abc")
    api.answers.extend([(503, {}, "busy"), (429, {"Retry-After": "0.01"}, "slow down"), (200, {}, {"ok": 1})])
    waits = []
    client = HttpClient.from_settings(
        Settings("p", {"url": api.url, "token_env": "FAULTLINE_TEST_TOKEN", "tenant": "team-a", "backoff": 0.5})
    )
    client.sleep = waits.append
    assert client.get_json("/api", {"q": "x"}) == {"ok": 1}
    assert waits == [0.5, 0.01]
    assert api.requests[0].headers["Authorization"] == "Bearer abc"
    assert api.requests[0].headers["X-Scope-OrgID"] == "team-a"
    assert api.requests[0].params == {"q": "x"}


def test_http_client_errors_say_whether_a_retry_can_help(api):
    client = HttpClient("p", api.url, retries=1, sleep=lambda _: None)
    api.answers.append((404, {}, "no such page"))
    with pytest.raises(ConnectorError, match="HTTP 404 no such page") as caught:
        client.get_json("/x")
    assert caught.value.permanent
    api.answers.extend([(500, {}, "oops"), (500, {}, "oops")])
    with pytest.raises(ConnectorError, match=r"HTTP 500 oops \(after 2 tries\)") as caught:
        client.get_json("/x")
    assert not caught.value.permanent
    api.answers.extend([(200, {}, b"<html>"), (200, {}, b"<html>")])
    with pytest.raises(ConnectorError, match=r"malformed JSON .*\(after 2 tries\)") as caught:
        client.get_json("/x")
    assert caught.value.permanent


def test_http_client_times_out(api):
    def slow(request):
        time.sleep(0.5)
        return 200, {}, {}

    api.respond = slow
    client = HttpClient("p", api.url, timeout=0.1, retries=0)
    with pytest.raises(ConnectorError, match="timed out after 0.1 s") as caught:
        client.get_json("/x")
    assert not caught.value.permanent


# -- gather --


class Scheduler_:
    name = "sched"
    skipped: list[str] = []

    def __init__(self, fail=None):
        self.fail = fail

    def attempt_context(self, discovered):
        if self.fail:
            raise self.fail
        stream = LogStream.from_bytes("logs/stdout.out", "stdout", None, b"hello\n")
        report = SourceReport("stderr", "app", "missing", "no stderr")
        return AttemptContext(attempt=discovered.attempt, streams=(stream,), reports=(report,))


class Broken:
    def __init__(self, name, error):
        self.name, self.error = name, error

    def fetch_logs(self, nodes, start, end):
        raise self.error

    def fetch_metrics(self, nodes, start, end):
        raise self.error


class Windowed:
    name = "windowed"

    def __init__(self):
        self.asked = None

    def fetch_logs(self, nodes, start, end):
        self.asked = (tuple(nodes), start, end)
        return [LogStream.from_bytes("logs/node01/syslog.log", "syslog", "node01", b"x\n")], [
            SourceReport("syslog", "system", "ok", "windowed: 1 node")
        ]


def test_gather_merges_sources_and_turns_failures_into_gaps():
    windowed = Windowed()
    context = gather(
        DiscoveredAttempt(attempt=ATTEMPT),
        Scheduler_(),
        [windowed, Broken("loki", ConnectorError("loki: HTTP 503 (after 4 tries)"))],
        [Broken("prom", KeyError("values"))],
    )
    assert [s.ref for s in context.streams] == ["logs/stdout.out", "logs/node01/syslog.log"]
    assert windowed.asked == (
        ("node01", "node02"),
        datetime(2026, 11, 2, 9, 55, tzinfo=UTC),
        datetime(2026, 11, 2, 11, 5, tzinfo=UTC),
    )
    assert [(r.name, r.kind, r.status) for r in context.reports] == [
        ("stderr", "app", "missing"),
        ("syslog", "system", "ok"),
        ("loki", "system", "error"),
        ("prom", "metrics", "error"),
    ]
    assert context.reports[2].detail == "loki: HTTP 503 (after 4 tries) (transient)"
    assert context.reports[3].detail == "unexpected KeyError: 'values'"


def test_gather_survives_a_failing_scheduler():
    context = gather(DiscoveredAttempt(attempt=ATTEMPT), Scheduler_(fail=ConnectorError("gone", permanent=True)))
    assert context.attempt == ATTEMPT
    assert [(r.name, r.status, r.detail) for r in context.reports] == [("sched", "error", "gone (permanent)")]
