"""The test suite's one set of fixtures: the bundle store and the one bundle builder, stored and analysed
attempts, people of each role and their clients, the real servers that scripts/ start (Slurm,
Prometheus), the doubles of the APIs that cannot run here (Loki, Kubernetes), and the browser.

Tests import nothing from another package's tests: what they share is here. The pure packages' tests
(``engine``, ``connectors``, ``demo``) use only the fixtures that need no Django.
"""

import io
import os
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from connectors.kubernetes.tests.kubernetes_double import kueue_cluster
from connectors.loki.tests.loki_double import LokiDouble
from connectors.slurm.tests import jobs as slurm_jobs
from connectors.tests.http_double import HttpDouble
from engine import Engine, load_rules
from engine.bundle import load_bundle
from engine.tests import bundles

ROOT = Path(__file__).resolve().parent
PURE = ("engine", "connectors", "demo")  # their tests need no Django: no bundle store, no database
PASSWORD = "a long password for tests"

# Playwright's sync API runs an event loop in the test thread; Django would take the database calls
# of the test (not of the served pages) for calls from async code and refuse them.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

CHROMIUM = "/usr/bin/chromium"  # scripts/browser.sh installs it; Playwright cannot download browsers here
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]


# -- bundles ---------------------------------------------------------------------------------------


@pytest.fixture(autouse=True)
def bundle_root(request, tmp_path):
    """Each test of a Django app stores bundles in its own root (``FAULTLINE_BUNDLE_ROOT``)."""
    if Path(request.node.path).relative_to(ROOT).parts[0] in PURE:
        return None
    root = tmp_path / "store"
    request.getfixturevalue("settings").FAULTLINE_BUNDLE_ROOT = root
    return root


@pytest.fixture(autouse=True)
def batches_at_once(request):
    """Backtests and reanalyses run in the test's own thread when their transaction commits. Without a broker they
    would run in a thread of their own (``FAULTLINE_BATCH_IN_THREAD``, for ``make run``); a test of that sets it."""
    if Path(request.node.path).relative_to(ROOT).parts[0] not in PURE:
        request.getfixturevalue("settings").FAULTLINE_BATCH_IN_THREAD = False


@pytest.fixture
def write_bundle():
    """``write_bundle(directory, logs=..., events=..., metrics=..., **attempt_fields)``: the one bundle
    builder (``engine/tests/bundles.py``)."""
    return bundles.write_bundle


@pytest.fixture
def make_bundle(tmp_path):
    """``make_bundle(**fields)``: a new bundle of a GPU that fell off the bus (``gpu_off_the_bus``: nodes,
    faulty, start, slow_lines and any attempt.json field), in a fresh directory under ``root`` (default:
    the test's own folder). ``make_bundle.start`` is when it starts unless told."""

    def make(*, root: Path | None = None, **fields) -> Path:
        folder = root or tmp_path / "bundles"
        folder.mkdir(parents=True, exist_ok=True)
        name = f"{fields.get('cluster', 'dgx-a')}-{fields.get('job_id', '48213')}-{fields.get('attempt', 0)}-"
        return bundles.gpu_off_the_bus(Path(tempfile.mkdtemp(prefix=name, dir=folder)), **fields)

    make.start = bundles.START
    return make


@pytest.fixture(scope="session")
def engine():
    """The default rule pack, compiled once."""
    return Engine(load_rules(ROOT / "rules" / "packs" / "default"))


@pytest.fixture
def diagnose_bundle(engine):
    """``diagnose_bundle(path)``: the default pack's diagnosis of the bundle at ``path``."""
    return lambda path: engine.diagnose(load_bundle(path))


@pytest.fixture
def diagnose_command():
    """``diagnose_command(*args)``: ``manage.py diagnose`` run as a process, as a user would, with no database
    to read a rule set from: it uses the default pack, the rule set a fresh store starts with (revision 1).
    ``script=("-c", code)`` runs ``code`` instead of ``manage.py`` with the same arguments."""
    environment = {**os.environ, "DATABASE_URL": "sqlite:////nonexistent/faultline.sqlite3"}

    def run(*args: str, script: tuple[str, ...] = ("manage.py",)) -> subprocess.CompletedProcess:
        command = [sys.executable, *script, "diagnose", *args]
        return subprocess.run(command, cwd=ROOT, env=environment, capture_output=True, text=True, timeout=120)

    return run


@pytest.fixture
def replace_in():
    """``replace_in(bundle, relative, old, new)``: edit one file of a test bundle (a line of unusual text)."""

    def replace(bundle: Path, relative: str, old: str, new: str) -> None:
        file = bundle / relative
        text = file.read_text()
        assert old in text
        file.write_text(text.replace(old, new))

    return replace


@pytest.fixture
def tar_gz():
    """``tar_gz(bundle, top="bundle")``: the bundle directory as a .tar.gz, inside one top-level directory
    ``top`` (None: at the top)."""

    def archive(bundle: Path, *, top: str | None = "bundle") -> bytes:
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w:gz") as packed:
            packed.add(bundle, arcname=top or ".")
        return buffer.getvalue()

    return archive


@pytest.fixture
def stored_bundles(bundle_root):
    """``stored_bundles()``: the bundle directories in the test's bundle store (staging left out)."""
    return lambda: [path for path in bundle_root.glob("*/*") if path.parent.name != ".incoming"]


@pytest.fixture
def staging_left(bundle_root):
    """``staging_left()``: what is left in the bundle store's staging folder."""
    return lambda: list((bundle_root / ".incoming").iterdir()) if (bundle_root / ".incoming").exists() else []


# -- stored attempts -------------------------------------------------------------------------------


@pytest.fixture
def store(db):
    """``store(bundle)``: the bundle ingested and analysed here and now (no task queue); the attempt."""
    from diagnoses.models import Attempt
    from diagnoses.services import analysis, attempts

    def ingest(bundle: Path) -> Attempt:
        attempt = attempts.attempt_ingest_directory(path=bundle, analyse=False)
        analysis.attempt_analyse(attempt_id=attempt.pk)
        return Attempt.objects.select_related("cluster", "job", "current_diagnosis").get(pk=attempt.pk)

    return ingest


@pytest.fixture
def folder_cluster(db):
    """``folder_cluster(folder, name="dgx-a", sources=[...], **fields)``: a cluster whose scheduler watches
    ``folder`` (bundles count as soon as they exist), polled every minute, gathering at once."""
    from diagnoses.models import Cluster
    from diagnoses.services import clusters

    def configure(folder: Path, *, name: str = "dgx-a", sources: list[dict] | None = None, **fields) -> Cluster:
        folder.mkdir(parents=True, exist_ok=True)
        values = {"poll_interval": 60, "gather_delay": 0, "enabled": True, **fields}
        return clusters.cluster_configure(
            cluster=Cluster.objects.filter(name=name).first(),
            name=name,
            connector="folder",
            scheduler_settings={"path": str(folder), "settle_seconds": 0},
            sources=sources or [],
            **values,
        )

    return configure


@pytest.fixture
def drop(tmp_path) -> Path:
    """A watched folder's path (not created)."""
    return tmp_path / "drop"


@pytest.fixture
def polled(django_capture_on_commit_callbacks):
    """``polled(cluster)``: poll the cluster as the worker would, running what the poll queues (the analyses)
    on commit; the number of attempts found."""
    from diagnoses.tasks import poll_cluster

    def poll(cluster) -> int | None:
        with django_capture_on_commit_callbacks(execute=True):
            return poll_cluster.apply(args=[cluster.pk]).get()

    return poll


@pytest.fixture
def exported_diagnosis(db, diagnose_command):
    """``exported_diagnosis(attempt, out)``: what ``manage.py diagnose`` prints for the attempt's bundle as
    ``export-bundle`` writes it out to ``out``."""
    from io import StringIO

    from django.core.management import call_command

    def export(attempt, out: Path) -> str:
        call_command("export-bundle", str(attempt.pk), str(out), stdout=StringIO())
        return diagnose_command(str(out)).stdout

    return export


# -- people ----------------------------------------------------------------------------------------


@pytest.fixture
def person(db):
    """``person(role, name="")``: a user with the role's group (None: signed in, no role) and the password
    ``person.password``."""
    from django.contrib.auth.models import Group, User

    def create(role: str | None, name: str = "") -> User:
        user = User.objects.create_user(name or f"person-{role or 'none'}".replace(" ", "-"), password=PASSWORD)
        if role:
            user.groups.add(Group.objects.get(name=role))
        return user

    create.password = PASSWORD
    return create


@pytest.fixture
def client_for(person):
    """``client_for(role, name="")``: a test client signed in as a new person of that role (the pages)."""
    from django.test import Client

    def sign_in(role: str | None, name: str = "") -> Client:
        client = Client()
        client.force_login(person(role, name))
        return client

    return sign_in


@pytest.fixture
def api_client_for(person):
    """``api_client_for(role, name="")``: an API client with the token of a new person of that role."""
    from rest_framework.authtoken.models import Token
    from rest_framework.test import APIClient

    def with_token(role: str | None, name: str = "") -> APIClient:
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=person(role, name)).key}")
        return client

    return with_token


# -- migrations ------------------------------------------------------------------------------------


@pytest.fixture
def migrator_of(db):
    """``migrator_of((app, migration), app=None)`` migrates the test database to that migration (forwards or
    backwards; ``None``: before the app's first), inside the test's transaction, which undoes it, and returns
    the models of ``app`` (default: the target's) as the applied migrations left them (``.Cluster``, ...)."""
    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor
    from django.db.migrations.loader import MigrationLoader

    def migrate(target: tuple[str, str | None], app: str | None = None) -> SimpleNamespace:
        MigrationExecutor(connection).migrate([target])
        loader = MigrationLoader(connection)
        apps = loader.project_state(list(loader.applied_migrations)).apps
        return SimpleNamespace(
            **{model.__name__: model for model in apps.get_app_config(app or target[0]).get_models()}
        )

    return migrate


# -- real servers and doubles ----------------------------------------------------------------------


@pytest.fixture
def celery_worker_process(tmp_path):
    """``celery_worker_process(name, environment)``: a real Celery worker with its beat (``diagnoses/tests/workers.py``)
    sharing the test database (``celery_worker_process.database_url``); stopped after the test (a warm shutdown, which
    stops its beat process too: a SIGKILL would leave that running)."""
    from diagnoses.tests import workers

    started = []

    def start(name: str, environment: dict) -> subprocess.Popen:
        started.append(workers.start_worker(name, environment, tmp_path))
        return started[-1]

    start.database_url = workers.database_url
    yield start
    for process in started:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory):
    """A real S3-protocol server on 127.0.0.1 (moto's standalone server, ``moto_server``, which the dev dependencies
    install beside this Python): ``.url``; stopped after the session."""
    import socket
    import urllib.request

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    log = open(tmp_path_factory.mktemp("s3") / "moto.log", "wb")  # noqa: SIM115 - closed with the server
    server = subprocess.Popen(
        [str(Path(sys.executable).parent / "moto_server"), "-H", "127.0.0.1", "-p", str(port)],
        stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            urllib.request.urlopen(f"{url}/moto-api/", timeout=2).close()
            break
        except OSError:
            if server.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"moto_server did not start on {url}") from None
            time.sleep(0.2)
    yield SimpleNamespace(url=url)
    server.terminate()
    server.wait(timeout=30)
    log.close()


@pytest.fixture
def object_store(s3_server, settings, monkeypatch):
    """Bundles in a fresh bucket of the real S3 server (``FAULTLINE_BUNDLE_STORE=s3://BUCKET/bundles``); the test's
    bundle root keeps the staging folder and the cache. ``.stored()``: the bucket's keys, ``.environment``: the
    variables that point a process at it."""
    import uuid

    from diagnoses import object_store as objects

    environment = {
        "AWS_ACCESS_KEY_ID": "faultline-test", "AWS_SECRET_ACCESS_KEY": "faultline-test",
        "FAULTLINE_BUNDLE_STORE": f"s3://faultline-{uuid.uuid4().hex[:16]}/bundles",
        "FAULTLINE_S3_ENDPOINT_URL": s3_server.url,
    }  # fmt: skip
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    settings.FAULTLINE_BUNDLE_STORE = environment["FAULTLINE_BUNDLE_STORE"]
    settings.FAULTLINE_S3_ENDPOINT_URL = s3_server.url
    objects.bucket_ensure()
    bucket = objects.location().bucket

    def stored() -> list[str]:
        listed = objects.client().list_objects_v2(Bucket=bucket)
        return sorted(item["Key"] for item in listed.get("Contents", ()))

    return SimpleNamespace(bucket=bucket, stored=stored, environment=environment)


@pytest.fixture(scope="session")
def prometheus_url() -> str:
    """The real Prometheus of scripts/prometheus.sh, with its backfilled DCGM and InfiniBand samples."""
    subprocess.run([str(ROOT / "scripts" / "prometheus.sh")], check=True, timeout=300)
    return Path("/var/tmp/faultline-prometheus/url").read_text().strip()


@pytest.fixture(scope="session")
def slurm():
    """The real single-node Slurm cluster of scripts/slurm.sh (needs root), and ``run``, ``wait_for`` and
    the job scripts of ``connectors/slurm/tests/jobs.py``."""
    subprocess.run([str(ROOT / "scripts" / "slurm.sh")], check=True, timeout=300)
    return slurm_jobs


@pytest.fixture
def loki_double():
    """``loki_double(streams)``: a running double of Loki's query_range API holding ``streams`` (labels and
    ``(nanosecond timestamp, line)`` entries); closed after the test."""
    started = []

    def start(streams: list[tuple[dict[str, str], list[tuple[int, str]]]]) -> LokiDouble:
        started.append(LokiDouble(streams))
        return started[-1]

    yield start
    for double in started:
        double.close()


@pytest.fixture
def webhook_receiver():
    """A running local endpoint (an ephemeral port) that receives webhooks: each request in ``.requests`` (``.json()``
    its body); it answers the statuses queued in ``.statuses`` first, then 200, each after the delay (seconds) queued
    in ``.delays``, if any. Closed after the test."""
    statuses: list[int] = []
    delays: list[float] = []

    def respond(request):
        if delays:
            time.sleep(delays.pop(0))
        status = statuses.pop(0) if statuses else 200
        return status, {"Content-Type": "text/plain"}, b"ok" if status < 400 else b"unavailable"

    double = HttpDouble(respond)
    double.statuses = statuses
    double.delays = delays
    yield double
    double.close()


@pytest.fixture
def kubernetes_api():
    """A running double of the Kubernetes API holding Kueue workloads, their pods, logs and events."""
    double = kueue_cluster()
    yield double
    double.close()


# -- the browser -----------------------------------------------------------------------------------


def _roles_ensure() -> None:
    from django.contrib.auth.models import Group, Permission

    from access.roles import assign_role_permissions

    assign_role_permissions(Group, Permission)


@pytest.fixture(scope="module")
def _roles_after_module(django_db_blocker):
    """Leave the role groups for the tests after a module of transactional tests (each ends with a flush)."""
    yield
    with django_db_blocker.unblock():
        _roles_ensure()


@pytest.fixture
def transactional_roles(transactional_db, _roles_after_module):
    """For transactional tests (the browser's: the live server's thread sees committed rows only; the commands'):
    the role groups, which an earlier transactional test's flush removed, now and for the tests after the module."""
    _roles_ensure()


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args):
    return {
        **browser_type_launch_args,
        "executable_path": CHROMIUM,
        "args": [*browser_type_launch_args.get("args", []), *CHROMIUM_ARGS],
    }


@pytest.fixture(scope="session")
def browser_context_args(browser_context_args):
    return {**browser_context_args, "viewport": {"width": 1280, "height": 800}}
