"""The Celery application. Tasks live in the apps' ``tasks.py`` modules."""

import os

from celery import Celery, states
from celery.signals import task_postrun, task_prerun
from django.db import close_old_connections, connections

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "triage.settings")

app = Celery("faultline")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


# A worker's database connection, kept from task to task as Django keeps a web process's from request to request.
# Celery's Django fix-up closes it before and after every task unless CELERY_DB_REUSE_MAX is set (celery/celery#9824:
# Django's checks cannot tell a connection that a time limit interrupted mid-query), and a new connection cost a task
# a PostgreSQL backend's start (docs/performance.md, "Pipeline"). A connection is kept only after a task that
# succeeded and left it idle: no statement in progress, no transaction open (psycopg's status, no round trip).
@task_prerun.connect
def _connections_check(task, **kwargs) -> None:
    """Before a task: Django's request-start check (CONN_MAX_AGE; the health check on the connection's first use)."""
    if not task.request.is_eager:
        close_old_connections()


@task_postrun.connect
def _connections_release(task, state=None, **kwargs) -> None:
    """After a task: close each connection unless the task succeeded and left it idle."""
    if task.request.is_eager:
        return
    for connection in connections.all(initialized_only=True):
        if connection.connection is None:
            continue
        if state == states.SUCCESS and _idle(connection):
            connection.close_if_unusable_or_obsolete()
        else:
            connection.close()


def _idle(connection) -> bool:
    if connection.vendor != "postgresql" or connection.in_atomic_block:
        return False
    from psycopg.pq import TransactionStatus  # not imported where the database is SQLite

    return connection.connection.info.transaction_status == TransactionStatus.IDLE
