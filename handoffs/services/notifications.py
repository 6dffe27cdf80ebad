"""Notifications: an event (a diagnosis recorded, a node become a repeat offender, the triage backlog past a
threshold) that a rule matches joins the rule's incident for its key, or opens one; an incident's message is sent
once its grouping window ends (``group_seconds``), and events with the same key join it, sending nothing more, for
``quiet_seconds`` after it opened. So a failed 512-node job, its requeues and re-analyses send one message.

Delivery is a Celery task (``handoffs.tasks.deliver_incident``) that retries a failed try with backoff; every try is
a ``Delivery`` row (the log on the notifications page).
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction
from django.urls import reverse
from django.utils import timezone

from diagnoses.models import Diagnosis, Node
from diagnoses.services import event_counts
from handoffs import selectors
from handoffs.channels import DeliveryError, rule_url, send
from handoffs.models import Delivery, Incident, NotificationRule

logger = logging.getLogger(__name__)
Trigger = NotificationRule.Trigger
GroupBy = NotificationRule.GroupBy
FILTERS = (("outcomes", "outcome"), ("domains", "domain"), ("subdomains", "subdomain"), ("clusters", "cluster"))
RULE_FIELDS = ("name", "enabled", "trigger", "outcomes", "domains", "subdomains", "clusters", "backlog_threshold",
               "channel", "url_env", "url_file", "recipients", "group_by", "group_seconds",
               "quiet_seconds")  # fmt: skip


# Rules -----------------------------------------------------------------------------------------------------------


def rule_save(*, rule: NotificationRule | None = None, **fields) -> NotificationRule:
    """Create or change a rule (``ValidationError`` naming the field); a webhook's URL must be readable now."""
    rule = rule or NotificationRule()
    for name, value in fields.items():
        if name not in RULE_FIELDS:
            raise ValueError(f"not a field of a notification rule: {name}")
        setattr(rule, name, value)
    rule.changed = timezone.now()
    rule.full_clean()
    if rule.channel != NotificationRule.Channel.EMAIL:
        try:
            rule_url(rule)
        except DeliveryError as exc:
            raise ValidationError({"url_file" if rule.url_file else "url_env": str(exc)}) from None
    rule.save()
    return rule


def rule_delete(*, rule: NotificationRule) -> None:
    rule.delete()


def rule_test(*, rule: NotificationRule, user) -> str:
    """Send a test message through the rule's channel now, whatever its trigger, filters and grouping; the endpoint's
    answer, or ``DeliveryError``. The message has the documented body (an incident with no id, key ``test``, one item
    of kind ``test``, and ``"test": true``); it joins no incident, and is neither logged as a delivery nor counted."""
    now = timezone.now()
    url = page_url(reverse("pages:notification-list")) + f"#rule-{rule.pk}"
    text = f"a test of the notification rule {rule.name}, sent by {user.get_username()}"
    item = {"kind": "test", "text": text, "url": url}
    incident = Incident(rule=rule, key="test", opened=now, last_event=now, due=now, events=1, items=[item])
    message = {**message_of(incident), "test": True}
    message["incident"]["url"] = url
    message["idempotency_key"] = f"faultline-test-{rule.pk}-{now.strftime('%Y%m%dT%H%M%S.%fZ')}"  # each test its own
    answer = send(rule, message)
    logger.info("test message of notification rule %s sent by %s: %s", rule.name, user.get_username(), answer)
    return answer


# Events ----------------------------------------------------------------------------------------------------------


def diagnosis_notify(*, diagnosis: Diagnosis, offenders: list[tuple[Node, int]]) -> list[Incident]:
    """The notifications of a new diagnosis: the rules on diagnoses, and the rules on repeat offenders for each of its
    root-cause nodes that is one (``offenders``: the node and its root causes in the window)."""
    item = diagnosis_item(diagnosis)
    incidents = [incident_add(rule=rule, item=item) for rule in matching(Trigger.DIAGNOSIS, item)]
    for node, count in offenders:
        offender = offender_item(item, node=node.name, count=count)
        incidents += [incident_add(rule=rule, item=offender) for rule in matching(Trigger.REPEAT_OFFENDER, offender)]
    return incidents


def pattern_notify(*, diagnosis: Diagnosis) -> list[Incident]:
    """The notifications of a new failure pattern (docs/leads.md): for each pattern this first diagnosis leads with,
    still new (not known), whose attempts that day reach a pattern rule's threshold with this one
    (``Lead.day_attempts``: one diagnosis a day reaches each count, so each rule hears of a pattern once a day)."""
    rules = selectors.rules_enabled(Trigger.PATTERN)
    if not rules:
        return []
    incidents = []
    for lead in selectors.pattern_leads_counted(diagnosis):
        item = pattern_item(lead, diagnosis)
        incidents += [
            incident_add(rule=rule, item=item)
            for rule in rules
            if lead.day_attempts == rule.backlog_threshold and rule_matches(rule, item)
        ]
    return incidents


def backlog_notify() -> list[Incident]:
    """The notifications of a triage backlog past a rule's threshold (in the rule's clusters, or all)."""
    rules = selectors.rules_enabled(Trigger.BACKLOG)
    if not rules:
        return []
    by_cluster = selectors.triage_backlog_by_cluster()
    incidents = []
    for rule in rules:
        backlog = sum(n for cluster, n in by_cluster.items() if not rule.clusters or cluster in rule.clusters)
        if backlog > rule.backlog_threshold:
            incidents.append(incident_add(rule=rule, item=backlog_item(backlog, rule.backlog_threshold)))
    return incidents


def matching(trigger: str, item: dict) -> list[NotificationRule]:
    return [rule for rule in selectors.rules_enabled(trigger) if rule_matches(rule, item)]


def rule_matches(rule: NotificationRule, item: dict) -> bool:
    return all(not getattr(rule, field) or item.get(key) in getattr(rule, field) for field, key in FILTERS)


def diagnosis_item(diagnosis: Diagnosis) -> dict:
    attempt = diagnosis.attempt
    nodes = sorted(node.name for node in diagnosis.root_cause_nodes.all())
    cause = f"{diagnosis.domain} / {diagnosis.subdomain}" if diagnosis.domain else "no root cause"
    where = f" on {', '.join(nodes[:5])}{' …' if len(nodes) > 5 else ''}" if nodes else ""
    number = f" #{attempt.number}" if attempt.number else ""
    return {
        "kind": "diagnosis",
        "cluster": attempt.cluster.name,
        "job_id": attempt.job.job_id,
        "attempt": attempt.number,
        "attempt_id": attempt.pk,
        "state": attempt.state,
        "outcome": diagnosis.outcome,
        "domain": diagnosis.domain,
        "subdomain": diagnosis.subdomain,
        "root_cause_nodes": nodes[:50],
        "text": f"job {attempt.job.job_id}{number} on {attempt.cluster.name}: {diagnosis.outcome}, {cause}{where}",
        "url": page_url(reverse("pages:attempt-detail", args=[attempt.pk])),
        "subject": f"{attempt.cluster.name}/{attempt.job.job_id}",
    }


def offender_item(diagnosis: dict, *, node: str, count: int) -> dict:
    days = settings.FAULTLINE_REPEAT_OFFENDER_DAYS
    return {
        "kind": "repeat_offender",
        "cluster": diagnosis["cluster"],
        "node": node,
        "root_causes": count,
        "days": days,
        "outcome": diagnosis["outcome"],
        "domain": diagnosis["domain"],
        "subdomain": diagnosis["subdomain"],
        "text": f"node {node} on {diagnosis['cluster']} was the root cause of {count} attempts in {days} days",
        "url": page_url(reverse("pages:node-detail", args=[diagnosis["cluster"], node])),
        "subject": f"{diagnosis['cluster']}/{node}",
    }


def pattern_item(lead, diagnosis: Diagnosis) -> dict:
    template = lead.template
    cluster = diagnosis.attempt.cluster.name
    return {
        "kind": "pattern",
        "cluster": cluster,
        "pattern": template.key,
        "template": template.text,
        "attempts_today": lead.day_attempts,
        "attempts": template.attempts,
        "text": f"new failure pattern {template.key} led {lead.day_attempts} attempts today (latest on {cluster}): "
        f"{template.text[:200]}",
        "url": page_url(reverse("pages:pattern-detail", args=[template.key])),
        "subject": f"pattern/{template.key}",
    }


def backlog_item(backlog: int, threshold: int) -> dict:
    return {
        "kind": "backlog",
        "backlog": backlog,
        "threshold": threshold,
        "text": f"{backlog} attempts wait for triage (threshold {threshold})",
        "url": page_url(reverse("pages:triage-queue")),
        "subject": "backlog",
    }


def page_url(path: str) -> str:
    return f"{settings.FAULTLINE_BASE_URL}{path}"


def incident_key(rule: NotificationRule, item: dict) -> str:
    if rule.group_by == GroupBy.CLUSTER and item.get("cluster"):
        return item["cluster"]
    if rule.group_by == GroupBy.ROOT_CAUSE and item.get("cluster"):
        return f"{item['cluster']}/{item.get('domain', '')}/{item.get('subdomain', '')}"
    return item["subject"]


def incident_add(*, rule: NotificationRule, item: dict, now: datetime | None = None) -> Incident:
    """Add the event to the rule's incident for its key that opened within the quiet period, or open one (its message
    due when the grouping window ends). One event at a time per rule (the rule's row is locked)."""
    now = now or timezone.now()
    key = incident_key(rule, item)[:400]
    with transaction.atomic():
        NotificationRule.objects.select_for_update().filter(pk=rule.pk).first()
        since = now - timedelta(seconds=max(rule.quiet_seconds, rule.group_seconds))
        incident = Incident.objects.filter(rule=rule, key=key, opened__gte=since).order_by("-opened", "-pk").first()
        if incident is None:
            due = now + timedelta(seconds=rule.group_seconds)
            return Incident.objects.create(rule=rule, key=key, opened=now, last_event=now, due=due, events=1,
                                           items=[item])  # fmt: skip
        incident.events += 1
        incident.last_event = now
        if len(incident.items) < Incident.ITEMS_KEPT:
            incident.items = [*incident.items, item]
        incident.save(update_fields=["events", "last_event", "items"])
        return incident


# Delivery --------------------------------------------------------------------------------------------------------


def incidents_queue_due(*, now: datetime | None = None) -> list[int]:
    """Queue the delivery of every incident whose grouping window ended (each once: it leaves ``pending``)."""
    from handoffs.tasks import deliver_incident

    now = now or timezone.now()
    with transaction.atomic():
        due = Incident.objects.select_for_update(skip_locked=True).filter(state=Incident.State.PENDING, due__lte=now)
        ids = list(due.values_list("pk", flat=True))
        Incident.objects.filter(pk__in=ids).update(state=Incident.State.QUEUED)
        for pk in ids:
            transaction.on_commit(lambda pk=pk: deliver_incident.delay(pk))
    return ids


def message_of(incident: Incident) -> dict:
    """The webhook's JSON body (docs/handoffs.md): the incident and what happened, and its idempotency key (the
    incident's id and version: its events so far), the same in every try of one delivery."""
    rule = incident.rule
    items = [{key: value for key, value in item.items() if key != "subject"} for item in incident.items]
    first = items[0]["text"] if items else ""
    more = f" (+{incident.events - 1} more event{'s' if incident.events > 2 else ''})" if incident.events > 1 else ""
    return {
        "version": 1,
        "idempotency_key": idempotency_key(incident),
        "rule": rule.name,
        "trigger": rule.trigger,
        "summary": f"Faultline: {first}{more}",
        "incident": {
            "id": incident.pk,
            "version": incident.events,
            "key": incident.key,
            "opened": incident.opened.isoformat(),
            "last_event": incident.last_event.isoformat(),
            "events": incident.events,
            "url": page_url(reverse("pages:notification-list")) + f"#incident-{incident.pk}",
        },
        "items": items,
        "items_omitted": incident.events - len(items),
    }


def idempotency_key(incident: Incident) -> str:
    """What a receiver deduplicates deliveries on (they are at-least-once): a try that timed out may have arrived. A
    greater version of the same incident is its message with events that joined while a delivery was retried."""
    return f"faultline-incident-{incident.pk}-v{incident.events}"


def incident_deliver(*, incident_id: int, number: int, final: bool) -> bool:
    """One try at sending the incident's message, logged; False when it failed and should be tried again."""
    incident = Incident.objects.select_related("rule").filter(pk=incident_id).first()
    if incident is None or incident.state in (Incident.State.SENT, Incident.State.FAILED):
        return True
    try:
        answer = send(incident.rule, message_of(incident))
    except DeliveryError as exc:
        with transaction.atomic():
            _delivery_log(incident, number=number, ok=False, answer=str(exc))
            if exc.permanent or final:
                Incident.objects.filter(pk=incident.pk).update(state=Incident.State.FAILED)
        if exc.permanent or final:
            logger.warning("notification %s failed for good after %d tries: %s", incident.pk, number, exc)
            return True
        return False
    with transaction.atomic():
        _delivery_log(incident, number=number, ok=True, answer=answer)
        Incident.objects.filter(pk=incident.pk).update(state=Incident.State.SENT, sent=timezone.now())
    return True


def _delivery_log(incident: Incident, *, number: int, ok: bool, answer: str) -> None:
    """A try in the delivery log, and counted (``faultline_notification_deliveries_total``)."""
    Delivery.objects.create(incident=incident, number=number, ok=ok, answer=answer[:1000])
    event_counts.events_count(event_counts.notification_delivery(incident.rule.channel, ok=ok))
