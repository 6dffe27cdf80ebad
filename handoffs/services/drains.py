"""Drains with a human in the loop: a triager proposes draining a node with a reason (or Faultline does, for a repeat
offender, when the cluster's policy says so); an admin approves, and Faultline runs the cluster's drain command
through its scheduler connector (``connectors.base.NodeControl``); an admin resumes the node the same way. Who, when
and the scheduler's answers are recorded.

Nothing runs without an admin's approval unless the cluster's policy turns on ``run_automatically``, and the circuit
breaker always holds: at most ``max_drained`` nodes of a cluster approved or drained at once, checked under a lock on
the cluster's policy when a drain is approved and again when it runs.
"""

from __future__ import annotations

import logging

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.utils import timezone

from connectors.base import ConnectorError, NodeControl
from diagnoses.cluster_connectors import scheduler_of
from diagnoses.models import Attempt, Cluster, Node
from diagnoses.services import event_counts
from handoffs import selectors
from handoffs.models import Drain, DrainPolicy

logger = logging.getLogger(__name__)
State = Drain.State
REASON_PREFIX = "faultline: "
POLICY_FIELDS = ("propose_repeat_offenders", "run_automatically", "max_drained")


class CircuitOpen(ValidationError):
    """The circuit breaker refused a drain: the cluster has as many nodes drained as its policy allows."""


def drain_propose(*, node: Node, reason: str, user=None, attempt: Attempt | None = None) -> Drain:
    """Propose draining the node (``user`` None: Faultline's own proposal); run at once when the cluster's policy
    says so. ``ValidationError`` when the node cannot be drained or already has a drain under way."""
    reason = " ".join(reason.split())
    if not reason:
        raise ValidationError({"reason": "say why the node should be drained"})
    cluster = node.cluster
    if not selectors.cluster_can_drain(cluster):
        raise ValidationError(f"the scheduler of {cluster.name} ({cluster.connector}) cannot drain nodes")
    drain = Drain(cluster=cluster, node=node, attempt=attempt, reason=reason[:200], proposed_by=user,
                  automatic=user is None)  # fmt: skip
    try:
        with transaction.atomic():
            drain.save()
    except IntegrityError:
        raise ValidationError(f"{node.name} already has a drain proposed, approved or in force") from None
    if selectors.drain_policy_of(cluster).run_automatically:
        try:
            drain_approve(drain=drain, user=None)
        except CircuitOpen as exc:
            logger.warning("automatic drain of %s not run: %s", node.name, exc.message)
    return drain


def drain_propose_repeat_offender(*, node: Node, count: int, attempt: Attempt | None = None) -> Drain | None:
    """Faultline's own proposal for a node that became a repeat offender, when the cluster's policy asks for one and
    the node has no drain under way; its reason cites the node's history (the latest attempts whose verdict of record
    names it), ``attempt`` is the one that made it a repeat offender."""
    if not selectors.drain_policy_of(node.cluster).propose_repeat_offenders:
        return None
    if Drain.objects.filter(node=node, state__in=Drain.ACTIVE).exists():
        return None
    reason = f"repeat offender: root cause of {count} attempts"
    causes = selectors.node_recent_causes(node)
    if causes:
        days = settings.FAULTLINE_REPEAT_OFFENDER_DAYS
        cited = ", ".join(f"job {job}#{number} {subdomain or domain}" for job, number, domain, subdomain in causes)
        reason += f" in {days} days ({cited}{', ...' if count > len(causes) else ''})"
    try:
        return drain_propose(node=node, reason=reason, attempt=attempt)
    except ValidationError as exc:
        logger.info("no automatic drain proposal for %s: %s", node.name, exc.messages)
        return None


def _policy_locked(cluster: Cluster) -> DrainPolicy:
    DrainPolicy.objects.get_or_create(cluster=cluster)
    return DrainPolicy.objects.select_for_update().get(cluster=cluster)


def _breaker_check(cluster: Cluster, policy: DrainPolicy, *, excluding: Drain, states) -> None:
    holding = Drain.objects.filter(cluster=cluster, state__in=states).exclude(pk=excluding.pk).count()
    if holding >= policy.max_drained:
        raise CircuitOpen(
            f"circuit breaker: {holding} node(s) of {cluster.name} already drained or being drained, and its policy "
            f"allows at most {policy.max_drained} at once; resume one or raise the limit"
        )


def drain_approve(*, drain: Drain, user) -> Drain:
    """Approve a proposed drain (``user`` None: the cluster's automatic execution) and queue its command. Refused
    (``CircuitOpen``) when the cluster already holds as many drains as its policy allows."""
    from handoffs.tasks import run_drain

    with transaction.atomic():
        policy = _policy_locked(drain.cluster)
        drain = Drain.objects.select_for_update().get(pk=drain.pk)
        if drain.state != State.PROPOSED:
            raise ValidationError(f"this drain is {drain.state}, not proposed")
        _breaker_check(drain.cluster, policy, excluding=drain, states=Drain.HOLDING)
        drain.state, drain.decided, drain.decided_by = State.APPROVED, timezone.now(), user
        drain.save(update_fields=["state", "decided", "decided_by"])
        transaction.on_commit(lambda: run_drain.delay(drain.pk))
    return drain


def drain_reject(*, drain: Drain, user) -> Drain:
    with transaction.atomic():
        drain = Drain.objects.select_for_update().get(pk=drain.pk)
        if drain.state != State.PROPOSED:
            raise ValidationError(f"this drain is {drain.state}, not proposed")
        drain.state, drain.decided, drain.decided_by = State.REJECTED, timezone.now(), user
        drain.save(update_fields=["state", "decided", "decided_by"])
    return drain


def drain_run(*, drain_id: int) -> Drain | None:
    """Run an approved drain's command through the cluster's scheduler (the task); the breaker is checked again."""
    with transaction.atomic():
        drain = Drain.objects.select_related("cluster", "node").filter(pk=drain_id).first()
        if drain is None:
            return None
        policy = _policy_locked(drain.cluster)
        drain = Drain.objects.select_for_update().select_related("cluster", "node").get(pk=drain_id)
        if drain.state != State.APPROVED:
            return drain
        try:
            _breaker_check(drain.cluster, policy, excluding=drain, states=(State.DRAINED,))
            scheduler = scheduler_of(drain.cluster)
            if not isinstance(scheduler, NodeControl):
                raise ConnectorError(f"the {drain.cluster.connector} scheduler cannot drain nodes", permanent=True)
            answer = scheduler.drain_node(drain.node.name, REASON_PREFIX + drain.reason)
        except CircuitOpen as exc:
            drain.state, drain.drain_answer, result = State.FAILED, _message(exc), "refused"
        except ConnectorError as exc:
            drain.state, drain.drain_answer, result = State.FAILED, _message(exc), "failed"
        else:
            drain.state, drain.drained, drain.drain_answer, result = State.DRAINED, timezone.now(), answer, "ok"
        drain.save(update_fields=["state", "drained", "drain_answer"])
        event_counts.events_count(event_counts.drain_command(drain.cluster.name, action="drain", result=result))
    return drain


def drain_resume(*, drain: Drain, user) -> Drain:
    """Give a drained node back to the scheduler (``scontrol update ... State=RESUME``, uncordon), now."""
    with transaction.atomic():
        drain = Drain.objects.select_for_update().select_related("cluster", "node").get(pk=drain.pk)
        if drain.state != State.DRAINED:
            raise ValidationError(f"this drain is {drain.state}, not drained")
        try:
            scheduler = scheduler_of(drain.cluster)
            if not isinstance(scheduler, NodeControl):
                raise ConnectorError(f"the {drain.cluster.connector} scheduler cannot resume nodes", permanent=True)
            answer = scheduler.resume_node(drain.node.name)
        except ConnectorError as exc:
            drain.resume_answer = f"resume failed: {exc}"
            drain.save(update_fields=["resume_answer"])
        else:
            drain.state, drain.resumed, drain.resumed_by = State.RESUMED, timezone.now(), user
            drain.resume_answer = answer
            drain.save(update_fields=["state", "resumed", "resumed_by", "resume_answer"])
        result = "ok" if drain.state == State.RESUMED else "failed"
        event_counts.events_count(event_counts.drain_command(drain.cluster.name, action="resume", result=result))
    if drain.state != State.RESUMED:  # the failure and its answer are kept: raised once they are committed
        raise ValidationError(drain.resume_answer)
    return drain


def drain_policy_set(*, cluster: Cluster, user, **fields) -> DrainPolicy:
    policy, _ = DrainPolicy.objects.get_or_create(cluster=cluster)
    for name, value in fields.items():
        if name not in POLICY_FIELDS:
            raise ValueError(f"not a field of a drain policy: {name}")
        setattr(policy, name, value)
    policy.changed, policy.changed_by = timezone.now(), user
    policy.full_clean()
    policy.save()
    return policy


def _message(exc: Exception) -> str:
    return exc.message if isinstance(exc, ValidationError) and hasattr(exc, "message") else str(exc)
