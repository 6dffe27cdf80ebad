"""A worker keeps its database connection from task to task only when the task succeeded and left it idle
(``triage/celery.py``); the signals are sent here as the worker sends them around a task."""

import time

import pytest
from celery.signals import task_postrun, task_prerun
from django.db import connection

from diagnoses.tasks import reap_stuck_attempts

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def task():
    if connection.vendor != "postgresql":
        pytest.skip("a worker's connection is kept on PostgreSQL only")
    return reap_stuck_attempts


def run(task, state: str) -> None:
    task_prerun.send(sender=task, task_id="t", task=task, args=(), kwargs={})
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    task_postrun.send(sender=task, task_id="t", task=task, args=(), kwargs={}, retval=None, state=state)


def test_the_connection_outlives_a_task_that_succeeded(task):
    run(task, "SUCCESS")
    opened = connection.connection
    run(task, "SUCCESS")
    assert opened is not None
    assert connection.connection is opened


@pytest.mark.parametrize("state", ["FAILURE", "RETRY"])
def test_a_task_that_did_not_succeed_leaves_no_connection(task, state):
    run(task, "SUCCESS")
    run(task, state)
    assert connection.connection is None


def test_a_connection_left_in_a_transaction_is_closed(task):
    task_prerun.send(sender=task, task_id="t", task=task, args=(), kwargs={})
    connection.ensure_connection()
    connection.connection.execute("BEGIN")  # a transaction the task left open: not idle
    task_postrun.send(sender=task, task_id="t", task=task, args=(), kwargs={}, retval=None, state="SUCCESS")
    assert connection.connection is None


def test_a_connection_with_a_statement_in_progress_is_closed(task):
    task_prerun.send(sender=task, task_id="t", task=task, args=(), kwargs={})
    connection.ensure_connection()
    connection.connection.pgconn.send_query(b"SELECT 1")  # sent, its result never read: a query cut off mid-way
    task_postrun.send(sender=task, task_id="t", task=task, args=(), kwargs={}, retval=None, state="SUCCESS")
    assert connection.connection is None


def test_a_connection_older_than_conn_max_age_is_replaced_before_a_task(task):
    run(task, "SUCCESS")
    connection.close_at = time.monotonic() - 1
    task_prerun.send(sender=task, task_id="t", task=task, args=(), kwargs={})
    assert connection.connection is None


def test_in_process_tasks_leave_the_connection_alone(task):
    connection.ensure_connection()
    opened = connection.connection
    task.push_request(is_eager=True)
    try:
        task_prerun.send(sender=task, task_id="t", task=task, args=(), kwargs={})
        task_postrun.send(sender=task, task_id="t", task=task, args=(), kwargs={}, retval=None, state="FAILURE")
    finally:
        task.pop_request()
    assert connection.connection is opened
