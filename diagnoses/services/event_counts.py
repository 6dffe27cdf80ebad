"""Counting what happens, once, when it happens (``EventCount``): the counters of ``/metrics``.

Each event adds to the row of its name and labels in the transaction that records it (one upsert, ``diagnoses.sums``:
processes adding at once lose nothing), so a count is the same in every process, survives restarts and never goes
down: a deletion, a withdrawn review or a re-analysis takes nothing from it. What the store holds *now* (attempts by
verdict, the triage backlog) is not counted here: ``/metrics`` reads it as gauges.

The events, their labels and their values:

- ``attempts_received`` (``cluster``, ``via``: ``discovery`` or ``upload``): an attempt stored;
- ``analyses`` (``cluster``, ``result``: the outcome recorded, or ``failed``): an analysis run to its end with a new
  diagnosis, or failed (a re-analysis with another rule-set revision counts again);
- ``first_diagnoses`` (``cluster``, ``outcome``, ``domain``): an attempt's first diagnosis, as the engine gave it;
- ``first_diagnosis_seconds`` (``since``: ``end`` or ``arrival``, ``bucket``: the first bound of ``LATENCY_BUCKETS``
  the time fits in, or ``+Inf``) and ``first_diagnosis_seconds_sum`` (``since``): the time from the job's end (an
  attempt found by discovery) or from its arrival (an uploaded bundle, whose job may have ended long before) to its
  first diagnosis, counted once per attempt; ``/metrics`` adds the buckets up into a Prometheus histogram;
- ``reviews`` (``cluster``, ``verdict``) and ``reviews_withdrawn`` (``cluster``);
- ``notification_deliveries`` (``channel``, ``result``: ``ok`` or ``failed``): a try at sending a notification;
- ``drain_commands`` (``cluster``, ``action``: ``drain`` or ``resume``, ``result``: ``ok``, ``failed`` or
  ``refused``, the circuit breaker's): a drain or resume run through a cluster's scheduler.
"""

from __future__ import annotations

import json
from datetime import datetime

from diagnoses.models import Attempt, Diagnosis, EventCount
from diagnoses.sums import sums_add

ATTEMPTS_RECEIVED = "attempts_received"
ANALYSES = "analyses"
FIRST_DIAGNOSES = "first_diagnoses"
FIRST_DIAGNOSIS_SECONDS = "first_diagnosis_seconds"
FIRST_DIAGNOSIS_SECONDS_SUM = "first_diagnosis_seconds_sum"
REVIEWS = "reviews"
REVIEWS_WITHDRAWN = "reviews_withdrawn"
NOTIFICATION_DELIVERIES = "notification_deliveries"
DRAIN_COMMANDS = "drain_commands"

FAILED = "failed"  # the ``result`` of an analysis that failed
SINCE = ("end", "arrival")
# Upper bounds (seconds) of the time to a first diagnosis. Never remove one: its counts would go to the next bound.
LATENCY_BUCKETS = (5.0, 15.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0, 3600.0, 4 * 3600.0, 24 * 3600.0)
INFINITY = "+Inf"

Event = tuple[str, dict[str, str], float]  # name, labels, how much to add


def labels_key(labels: dict[str, str]) -> str:
    """The labels as ``EventCount.labels`` holds them."""
    return json.dumps(labels, sort_keys=True, separators=(",", ":"))


def bound_label(bound: float) -> str:
    """A bucket's bound as the ``bucket`` label (and Prometheus' ``le``) spells it."""
    return f"{bound:g}"


def events_count(*events: Event) -> None:
    """Add each event to its count, in one statement (the rows in key order: two transactions counting the same
    events lock their rows in the same order)."""
    amounts: dict[tuple[str, str], float] = {}
    for name, labels, amount in events:
        key = (name, labels_key(labels))
        amounts[key] = amounts.get(key, 0) + amount
    sums_add(
        EventCount._meta.db_table, ("name", "labels"), ("value",), [(*key, n) for key, n in sorted(amounts.items())]
    )


def attempt_received(attempt: Attempt) -> Event:
    via = "upload" if attempt.discovery is None else "discovery"
    return ATTEMPTS_RECEIVED, {"cluster": attempt.cluster.name, "via": via}, 1


def analysis_failed(attempt: Attempt) -> Event:
    return ANALYSES, {"cluster": attempt.cluster.name, "result": FAILED}, 1


def diagnosis_recorded(attempt: Attempt, diagnosis: Diagnosis, *, first: bool) -> list[Event]:
    """The events of a new diagnosis: an analysis run, and for the attempt's first diagnosis that diagnosis and the
    time it took (from the job's end for an attempt found by discovery, from its arrival for an uploaded one)."""
    cluster = attempt.cluster.name
    events: list[Event] = [(ANALYSES, {"cluster": cluster, "result": diagnosis.outcome}, 1)]
    if first:
        since, start = ("arrival", attempt.received) if attempt.discovery is None else ("end", attempt.end)
        seconds = _seconds(start, diagnosis.created)
        bound = next((b for b in LATENCY_BUCKETS if seconds <= b), None)
        events += [
            (FIRST_DIAGNOSES, {"cluster": cluster, "outcome": diagnosis.outcome, "domain": diagnosis.domain}, 1),
            (FIRST_DIAGNOSIS_SECONDS, {"since": since, "bucket": INFINITY if bound is None else bound_label(bound)}, 1),
            (FIRST_DIAGNOSIS_SECONDS_SUM, {"since": since}, seconds),
        ]
    return events


def _seconds(start: datetime, end: datetime) -> float:
    return max(0.0, (end - start).total_seconds())  # a clock ahead of the database's never counts backwards


def review_recorded(cluster: str, verdict: str) -> Event:
    return REVIEWS, {"cluster": cluster, "verdict": verdict}, 1


def review_withdrawn(cluster: str) -> Event:
    return REVIEWS_WITHDRAWN, {"cluster": cluster}, 1


def notification_delivery(channel: str, *, ok: bool) -> Event:
    return NOTIFICATION_DELIVERIES, {"channel": channel, "result": "ok" if ok else "failed"}, 1


def drain_command(cluster: str, *, action: str, result: str) -> Event:
    return DRAIN_COMMANDS, {"cluster": cluster, "action": action, "result": result}, 1
