"""Without a broker (``make run``: tasks in-process) a backtest runs in a thread of the web process: the request
that starts it answers at once, and the run's page shows its progress, polling, until it finishes."""

import threading
import time

from access.roles import RULE_EDITOR
from rules.services import active_revision
from workbench.models import BatchRun
from workbench.services import batches


def wait_for(condition, seconds: float = 30.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def test_without_a_broker_a_run_goes_on_in_a_thread_and_its_page_shows_its_progress(
    transactional_roles, settings, make_bundle, store, client_for, monkeypatch
):
    settings.FAULTLINE_BATCH_IN_THREAD = True
    store(make_bundle(job_id="1"))
    store(make_bundle(job_id="2"))
    revision = active_revision()
    gate, step = threading.Event(), batches._Backtest.step
    monkeypatch.setattr(batches._Backtest, "step", lambda self, attempt_id: gate.wait(30) and step(self, attempt_id))
    client = client_for(RULE_EDITOR)

    started = client.post(f"/rules/sets/{revision.ruleset.name}/r{revision.number}/backtest", {})
    run = BatchRun.objects.get()
    assert started.status_code == 302  # answered while the run waits at its first attempt
    assert started["Location"] == f"/rules/runs/{run.pk}/"
    wait_for(lambda: BatchRun.objects.get().state == BatchRun.State.RUNNING)
    page = client.get(f"/rules/runs/{run.pk}/").content.decode()
    assert 'data-state="running"' in page
    assert "0 of 2 attempts" in page
    assert 'hx-trigger="every 1s"' in page  # the page polls its progress

    gate.set()
    wait_for(lambda: BatchRun.objects.get().finished_state)
    page = client.get(f"/rules/runs/{run.pk}/").content.decode()
    assert 'data-state="done"' in page
    assert "2 of 2 attempts" in page
    assert 'hx-trigger="every 1s"' not in page
