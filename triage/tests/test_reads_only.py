"""A GET reads: no GET of any URL pattern (the pages, the workbench, the API, the schema, the admin) calls
a connector, writes a file or writes to the database.

Every URL pattern is requested with real objects behind it, as a superuser (who may see every page),
while the connector layer raises (every connector class, the gathering of a context, subprocesses and
HTTP), every file write raises and every database write raises. Among the objects is an attempt that a
cluster's scheduler found and nobody gathered yet, tried in the workbench: a page that gathered it would
fail here. The one file a GET may write is the compiled-pattern cache of a rule set being compiled (a
cache, not state: ``rules.engine_cache.ENGINE_CACHE``). A new URL pattern without arguments to fill in
here makes the test fail until it is added.
"""

from __future__ import annotations

import builtins
import io
import os
import shutil
import subprocess
from contextlib import ExitStack, contextmanager
from datetime import timedelta
from pathlib import Path
from unittest import mock

import pytest
import requests
from django.contrib import admin
from django.db import connection
from django.urls import URLPattern, URLResolver, get_resolver, reverse

import connectors.gather
from access.roles import TRIAGER
from connectors.base import KINDS, connector_class
from diagnoses.models import Attempt, Diagnosis, Evidence, Lead, NodeEvent
from diagnoses.services import discovery, gathering, reviews
from handoffs.models import Delivery, Drain, Incident, NotificationRule
from rules import services as rule_services
from rules.engine_cache import ENGINE_CACHE
from rules.models import Activation
from workbench.models import BatchRun
from workbench.services.cases import case_promote

pytestmark = pytest.mark.django_db
WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC
WRITES = "INSERT", "UPDATE", "DELETE", "CREATE", "ALTER", "DROP", "TRUNCATE"
# The queries that exercise more than a pattern's plain GET: ``{(namespace, name): [query, ...]}``.
QUERIES = {
    ("pages", "overview"): ["?days=7"],
    ("pages", "job-list"): ["?cluster=dgx-a&sort=-name", "?outcome=attributed"],
    ("pages", "triage-queue"): ["?tab=reviewed"],
    ("pages", "attempt-detail"): ["?window=attempt"],
    ("pages", "review-subdomains"): ["?corrected_domain=hardware"],
    ("pages", "node-detail"): ["?role=root_cause"],
    ("pages", "node-list"): ["?q=node&cluster=dgx-a&fault=1"],
    ("pages", "search"): ["?q=1", "?q=node0"],
    ("workbench", "try"): ["?attempt={attempt}", "?attempt={discovered}"],
    ("workbench", "explore"): ["?attempt={attempt}&ref={ref}", "?line=NVRM: Xid 79&stream=syslog"],
    ("workbench", "diff"): ["?a=1&b=2"],
    ("workbench", "editor"): ["?from=1", "?from=2&rule=gpu.xid.nvlink&q=xid"],
    ("api", "attempt-list"): ["?outcome=attributed&node=node02", "?root_cause_node=node02&verdict_source=review"],
    ("api", "review-list"): ["?attempt=1&withdrawn=false"],
    ("api", "node-list"): ["?cluster=dgx-a&at_fault=true&q=node"],
    ("api", "drain-list"): ["?state=proposed&active=true&node=node02"],
    ("api", "evidence-excerpt"): ["?context=3"],
}


@pytest.fixture
def stored(make_bundle, write_bundle, store, person, folder_cluster, tmp_path, django_capture_on_commit_callbacks):
    """One of everything: an analysed and reviewed attempt kept as a regression case, an attempt no rule explains
    (its leads, their failure pattern), a draft revision, a finished backtest, a cluster watching a folder whose
    attempt is discovered but not gathered, and a run of the first attempt's job that worked before it."""
    attempt = store(make_bundle(job_id="1"))
    unknown = store(
        write_bundle(
            tmp_path / "unknown",
            job_id="3",
            logs={
                "node01/syslog.log": [
                    "Nov  2 10:14:07 node01 fabricd[311]: port 4 of switch sw-7 wedged: credit loop failure on lane 3"
                ]
            },
        )
    )
    lead = Lead.objects.get(lead_set__attempt=unknown, position=1)
    triager = person(TRIAGER)
    review = reviews.review_create(diagnosis=attempt.current_diagnosis, reviewer=triager, verdict="confirmed")
    case_promote(attempt=attempt, user=triager)
    first = rule_services.active_revision()
    draft = rule_services.revision_create(ruleset=first.ruleset, text=first.text.replace("# ", "## ", 1))
    run = BatchRun.objects.create(kind="backtest", revision=draft, limit=5, time_limit=60, state="done")
    cluster = folder_cluster(tmp_path / "drop")
    make_bundle(root=tmp_path / "drop", cluster="dgx-a", job_id="2")
    discovery.cluster_poll(cluster_id=cluster.pk)  # its analysis (the gathering) is queued on commit, never run
    discovered = Attempt.objects.get(job__job_id="2")
    assert discovered.gathered is None
    evidence = Evidence.objects.filter(diagnosis=attempt.current_diagnosis, node__isnull=False).first()
    rule = NotificationRule.objects.create(name="pages", url_env="HOOK")
    incident = Incident.objects.create(rule=rule, key="dgx-a/1", due=rule.created, events=1, items=[])
    delivery = Delivery.objects.create(incident=incident, number=1, ok=False, answer="HTTP 503")
    drain = Drain.objects.create(
        cluster=attempt.cluster, node=evidence.node, attempt=attempt, reason="xid", proposed_by=triager
    )
    # a run of job 1 that worked before it: "What changed" compares the two bundles (read, never written)
    store(
        make_bundle(job_id="1", attempt=1, state="COMPLETED", faulty=None, start=make_bundle.start - timedelta(days=1))
    )
    return {
        "notification-rule": rule,
        "delivery": delivery,
        "attempt": attempt,
        "discovered": discovered,
        "evidence": evidence,
        "review": review,
        "cluster": cluster,
        "draft": draft,
        "run": run,
        "event": NodeEvent.objects.first(),
        "diagnosis": Diagnosis.objects.first(),
        "activation": Activation.objects.first(),
        "drain": drain,
        "lead": lead,
    }


def kwargs_for(namespace: str | None, name: str, names: list[str], stored: dict) -> dict:
    """The URL arguments of a pattern, from the stored objects (a KeyError names what is missing here)."""
    api_objects = {
        "cluster": stored["cluster"], "job": stored["attempt"].job, "attempt": stored["attempt"],
        "diagnosis": stored["diagnosis"], "evidence": stored["evidence"], "event": stored["event"],
        "review": stored["review"], "revision": stored["draft"], "activation": stored["activation"],
        "notification-rule": stored["notification-rule"], "delivery": stored["delivery"],
        "node": stored["evidence"].node, "drain": stored["drain"],
    }  # fmt: skip
    values = {
        "format": "json",
        "evidence_id": stored["evidence"].pk,
        "event_id": stored["event"].pk,
        "review_id": stored["review"].pk,
        "lead_id": stored["lead"].pk,
        "key": stored["lead"].template.key,
        "cluster": stored["attempt"].cluster.name,
        "job_id": stored["attempt"].job.job_id,
        "number": stored["draft"].number,
    }
    if namespace == "api":
        values["pk"] = api_objects[name.rsplit("-", 1)[0]].pk if "pk" in names else None
        values["name"] = "default"
    elif namespace == "workbench":
        values["pk"] = stored["run"].pk
        values["name"] = "default"
    else:
        values["pk"] = stored["lead"].lead_set.attempt_id if name == "lead-context" else stored["attempt"].pk
        values["name"] = stored["evidence"].node.name
    return {key: values[key] for key in names}


def named_urls(stored: dict) -> list[tuple[str, str]]:
    """(``namespace:name``, URL) of every pattern outside the admin (each format-suffix variant too)."""
    urls = []

    def walk(patterns, namespace=None):
        for pattern in patterns:
            if isinstance(pattern, URLResolver):
                if pattern.app_name != "admin":
                    walk(pattern.url_patterns, pattern.namespace or namespace)
                continue
            assert isinstance(pattern, URLPattern)
            route = pattern.pattern
            names = list(getattr(route, "converters", {}) or route.regex.groupindex)
            full = f"{namespace}:{pattern.name}" if namespace else pattern.name
            urls.append((full, reverse(full, kwargs=kwargs_for(namespace, pattern.name, names, stored))))

    walk(get_resolver().url_patterns)
    return urls


def project_urls(stored: dict) -> list[str]:
    """A URL for every pattern outside the admin (each format-suffix variant too), and the extra queries."""
    urls = []
    for full, url in named_urls(stored):
        urls.append(url)
        namespace, _, name = full.rpartition(":")
        for query in QUERIES.get((namespace or None, name), []):
            urls.append(url + query.format(
                attempt=stored["attempt"].pk, discovered=stored["discovered"].pk, ref=stored["evidence"].ref
            ))  # fmt: skip
    return urls


def admin_urls(stored: dict) -> list[str]:
    """The admin's index, each app's index, and each registered model's list, add, change, history and
    delete-confirmation pages (the change pages of one stored object)."""
    urls = [reverse("admin:index")]
    for model in admin.site._registry:
        meta = model._meta
        urls.append(reverse("admin:app_list", args=[meta.app_label]))
        urls += [reverse(f"admin:{meta.app_label}_{meta.model_name}_{page}") for page in ("changelist", "add")]
        first = model.objects.first()
        if first is not None:
            for page in ("change", "history", "delete"):
                urls.append(reverse(f"admin:{meta.app_label}_{meta.model_name}_{page}", args=[first.pk]))
    return sorted(set(urls))


@contextmanager
def nothing_but_reads(attempted: list[str]):
    """Within: the connector layer, file writes and database writes raise (and are listed in ``attempted``)."""

    def refuse(what: str):
        attempted.append(what)
        raise PermissionError(f"a GET must not {what}")

    def cache(path) -> bool:
        return Path(os.fsdecode(path)).resolve().is_relative_to(ENGINE_CACHE.resolve())

    real_open, real_os_open = builtins.open, os.open

    def guarded_open(file, mode="r", *args, **kwargs):
        if any(flag in mode for flag in "wax+") and not (isinstance(file, str | bytes | Path) and cache(file)):
            refuse(f"open {file} for writing")
        return real_open(file, mode, *args, **kwargs)

    def guarded_os_open(path, flags, *args, **kwargs):
        if flags & WRITE_FLAGS and not cache(path):
            refuse(f"open {path} for writing")
        return real_os_open(path, flags, *args, **kwargs)

    def writing(name: str, real):
        def guarded(path, *args, **kwargs):
            if not cache(path):
                refuse(f"{name} {path}")
            return real(path, *args, **kwargs)

        return guarded

    def refused(what: str):
        return lambda *args, **kwargs: refuse(what)

    def reject_writes(execute, sql, params, many, context):
        if sql.lstrip().upper().startswith(WRITES):
            refuse(f"write to the database: {sql[:80]}")
        return execute(sql, params, many, context)

    with ExitStack() as stack:
        for kind in KINDS:
            stack.enter_context(
                mock.patch.object(connector_class(kind), "__init__", refused(f"build a {kind} connector"))
            )
        stack.enter_context(mock.patch.object(connectors.gather, "gather", refused("gather from connectors")))
        stack.enter_context(mock.patch.object(gathering, "gather_sources", refused("gather from connectors")))
        stack.enter_context(mock.patch.object(subprocess.Popen, "__init__", refused("run a command")))
        stack.enter_context(mock.patch.object(requests.Session, "send", refused("send an HTTP request")))
        stack.enter_context(mock.patch.object(builtins, "open", guarded_open))
        stack.enter_context(mock.patch.object(io, "open", guarded_open))
        stack.enter_context(mock.patch.object(os, "open", guarded_os_open))
        for name in ("mkdir", "makedirs", "rename", "replace", "remove", "unlink", "rmdir", "link", "symlink"):
            stack.enter_context(mock.patch.object(os, name, writing(f"os.{name}", getattr(os, name))))
        for name in ("rmtree", "copyfile", "copytree", "move"):
            stack.enter_context(mock.patch.object(shutil, name, writing(f"shutil.{name}", getattr(shutil, name))))
        stack.enter_context(connection.execute_wrapper(reject_writes))
        yield


def test_no_get_calls_a_connector_or_writes_a_file_or_a_row(stored, admin_client):
    urls = project_urls(stored) + admin_urls(stored)
    answers = {}
    # The schema's first rendering imports libraries that probe the system (drf-spectacular imports
    # django.contrib.gis, whose import runs ldconfig): that import, not the request, is left outside.
    assert admin_client.get(reverse("schema")).status_code == 200

    for url in urls:
        attempted: list[str] = []
        with nothing_but_reads(attempted):
            response = admin_client.get(url)
            if hasattr(response, "streaming_content"):
                b"".join(response.streaming_content)
        answers[url] = (response.status_code, attempted)

    assert {url: answer for url, answer in answers.items() if answer[1]} == {}
    assert {url: status for url, (status, _) in answers.items() if status >= 500} == {}
    assert len(urls) > 150
    assert answers[reverse("workbench:try", args=["default", 2]) + f"?attempt={stored['discovered'].pk}"][0] == 200
