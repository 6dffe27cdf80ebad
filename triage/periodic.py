"""Celery beat's schedule run by a thread, for the embedded default (``make run``: no broker, tasks in-process).

Without it nothing periodic happens there: notifications whose grouping window ended are never sent, clusters
are never polled, stuck attempts are never re-queued. ``manage.py serve`` starts one next to the development
server; production runs ``celery beat`` instead (docs/operations.md).
"""

import logging
import threading
import time
from collections.abc import Callable

from django.db import close_old_connections

logger = logging.getLogger(__name__)


class PeriodicTasks(threading.Thread):
    """Runs each task of ``schedule`` (``CELERY_BEAT_SCHEDULE``'s form: name -> {"task", "schedule" in seconds})
    once at start and then every ``schedule`` seconds, one at a time, in this thread. A task that fails is
    logged and runs again at its next turn."""

    def __init__(self, app, schedule: dict, *, clock: Callable[[], float] = time.monotonic, tick: float = 1.0):
        super().__init__(name="periodic-tasks", daemon=True)
        self.app = app
        self.entries = sorted((name, entry["task"], float(entry["schedule"])) for name, entry in schedule.items())
        self.clock = clock
        self.tick = tick
        self.due = dict.fromkeys((name for name, _, _ in self.entries), float("-inf"))
        self.stopping = threading.Event()

    def run_due(self) -> list[str]:
        """Run the tasks whose turn has come; returns their names."""
        ran = []
        for name, task, interval in self.entries:
            now = self.clock()
            if now < self.due[name]:
                continue
            self.due[name] = now + interval
            close_old_connections()
            try:
                self.app.tasks[task].apply(throw=True)
            except Exception:
                logger.exception("periodic task %s (%s) failed", name, task)
            finally:
                close_old_connections()
            ran.append(name)
        return ran

    def run(self) -> None:
        while not self.stopping.is_set():
            self.run_due()
            self.stopping.wait(self.tick)

    def stop(self) -> None:
        self.stopping.set()
