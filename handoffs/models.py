"""What the hand-offs store: the new diagnoses whose hand-offs are still to run, notification rules, the incidents
they group events into and the log of each delivery; each cluster's drain policy and the drains of its nodes
(proposed, approved, run, resumed)."""

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MinValueValidator
from django.db import models
from django.utils import timezone

from diagnoses.models import Attempt, Cluster, Diagnosis, Node


class PendingHandoff(models.Model):
    """A new attempt's diagnosis whose hand-offs (notifications, drain proposals) have not run yet: written when the
    store announces it, removed by the task that runs them, in that task's transaction. A message the broker lost
    leaves the row, and the notification tick queues it again (``handoffs_requeue``)."""

    diagnosis = models.OneToOneField(Diagnosis, on_delete=models.CASCADE, primary_key=True, related_name="+")
    noted = models.DateTimeField(default=timezone.now, db_index=True, help_text="When it was last queued")
    requeued = models.PositiveIntegerField(default=0, help_text="How many times the tick queued it again")

    def __str__(self) -> str:
        return f"hand-offs of diagnosis {self.diagnosis_id}"


class NotificationRule(models.Model):
    """When to tell someone (a trigger and its filters), where (a channel and its target) and how often (events
    with the same key within ``group_seconds`` make one message; none again for that key during ``quiet_seconds``).

    The webhook URL is a secret (it carries a token): it is never stored, only the name of the environment variable
    (``url_env``) or the file (``url_file``) that holds it."""

    class Trigger(models.TextChoices):
        DIAGNOSIS = "diagnosis", "a diagnosis is recorded"
        REPEAT_OFFENDER = "repeat_offender", "a node becomes a repeat offender"
        BACKLOG = "backlog", "the triage backlog passes a threshold"
        PATTERN = "pattern", "a new failure pattern leads a threshold of attempts in a day"

    class Channel(models.TextChoices):
        WEBHOOK = "webhook", "webhook (JSON)"
        SLACK = "slack", "Slack-compatible incoming webhook"
        EMAIL = "email", "e-mail"

    class GroupBy(models.TextChoices):
        JOB = "job", "job (its attempts and re-analyses)"
        ROOT_CAUSE = "root_cause", "cluster, domain and subdomain"
        CLUSTER = "cluster", "cluster"

    name = models.CharField(max_length=100, unique=True)
    enabled = models.BooleanField(default=True)
    trigger = models.CharField(max_length=20, choices=Trigger.choices, default=Trigger.DIAGNOSIS)
    outcomes = models.JSONField(default=list, blank=True, help_text="Outcomes that match (empty: any)")
    domains = models.JSONField(default=list, blank=True, help_text="Domains that match (empty: any)")
    subdomains = models.JSONField(default=list, blank=True, help_text="Subdomains that match (empty: any)")
    clusters = models.JSONField(default=list, blank=True, help_text="Cluster names that match (empty: any)")
    backlog_threshold = models.PositiveIntegerField(
        default=0,
        help_text="For the backlog trigger: notify when more attempts than this wait for triage; for the pattern "
        "trigger: when a new failure pattern leads this many attempts in a day (docs/leads.md)",
    )
    channel = models.CharField(max_length=10, choices=Channel.choices, default=Channel.WEBHOOK)
    url_env = models.CharField(max_length=200, blank=True, help_text="The environment variable holding the URL")
    url_file = models.CharField(max_length=500, blank=True, help_text="The file holding the URL")
    recipients = models.JSONField(default=list, blank=True, help_text="E-mail addresses (the e-mail channel)")
    group_by = models.CharField(max_length=12, choices=GroupBy.choices, default=GroupBy.JOB)
    group_seconds = models.PositiveIntegerField(
        default=60, help_text="Seconds to wait after an incident's first event before its message is sent"
    )
    quiet_seconds = models.PositiveIntegerField(
        default=3600, help_text="Events with the same key within this many seconds join the incident: no new message"
    )
    created = models.DateTimeField(default=timezone.now)
    changed = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    def clean(self):
        errors = {}
        for field in ("outcomes", "domains", "subdomains", "clusters", "recipients"):
            value = getattr(self, field)
            if not isinstance(value, list) or not all(isinstance(item, str) and item for item in value):
                errors[field] = "must be a list of non-empty strings"
        if self.channel == self.Channel.EMAIL:
            if not self.recipients:
                errors["recipients"] = "the e-mail channel needs at least one recipient"
            if self.url_env or self.url_file:
                errors["url_env"] = "the e-mail channel has no URL"
        elif bool(self.url_env) == bool(self.url_file):
            errors["url_env"] = "name exactly one of url_env (an environment variable) and url_file (a file)"
        if self.trigger in (self.Trigger.BACKLOG, self.Trigger.PATTERN) and self.backlog_threshold < 1:
            errors["backlog_threshold"] = f"the {self.trigger} trigger needs a threshold of at least 1"
        if errors:
            raise ValidationError(errors)


class Incident(models.Model):
    """The events of one rule with one key (``job``: cluster/job id, ...) that make one message."""

    class State(models.TextChoices):
        PENDING = "pending"  # gathering events until ``due``
        QUEUED = "queued"  # its delivery is queued or retrying
        SENT = "sent"
        FAILED = "failed"  # every try failed

    rule = models.ForeignKey(NotificationRule, on_delete=models.CASCADE, related_name="incidents")
    key = models.CharField(max_length=400)
    opened = models.DateTimeField(default=timezone.now)
    last_event = models.DateTimeField(default=timezone.now)
    due = models.DateTimeField(help_text="When its message is sent (the grouping window's end)")
    events = models.PositiveIntegerField(default=0)
    items = models.JSONField(default=list, help_text="What happened, first events first (at most ITEMS_KEPT)")
    state = models.CharField(max_length=8, choices=State.choices, default=State.PENDING)
    sent = models.DateTimeField(null=True, blank=True)

    ITEMS_KEPT = 50

    class Meta:
        ordering = ["-opened", "-pk"]
        indexes = [
            models.Index(fields=["rule", "key", "-last_event"], name="incident_rule_key"),
            models.Index(fields=["state", "due"], name="incident_state_due"),
        ]

    def __str__(self) -> str:
        return f"{self.rule}: {self.key}"


class Delivery(models.Model):
    """One try at sending an incident's message: the delivery log."""

    incident = models.ForeignKey(Incident, on_delete=models.CASCADE, related_name="deliveries")
    number = models.PositiveIntegerField(help_text="1 for the first try")
    time = models.DateTimeField(default=timezone.now)
    ok = models.BooleanField()
    answer = models.TextField(blank=True, help_text="The endpoint's status, or why the try failed")

    class Meta:
        ordering = ["-time", "-pk"]
        verbose_name_plural = "deliveries"

    def __str__(self) -> str:
        return f"{self.incident} try {self.number}: {'ok' if self.ok else 'failed'}"


class DrainPolicy(models.Model):
    """A cluster's drain settings, which only an admin changes: automatic proposals for repeat offenders, automatic
    execution (off unless turned on) and the circuit breaker, the most nodes drained by Faultline at once."""

    cluster = models.OneToOneField(Cluster, on_delete=models.CASCADE, related_name="drain_policy")
    propose_repeat_offenders = models.BooleanField(
        default=False, help_text="Propose draining a node as soon as it becomes a repeat offender"
    )
    run_automatically = models.BooleanField(
        default=False, help_text="Drain proposed nodes without an admin's approval (the circuit breaker still holds)"
    )
    max_drained = models.PositiveIntegerField(
        default=2,
        validators=[MinValueValidator(1)],
        help_text="The circuit breaker: at most this many nodes of the cluster drained by Faultline at once",
    )
    changed = models.DateTimeField(default=timezone.now)
    changed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        verbose_name_plural = "drain policies"

    def __str__(self) -> str:
        return f"{self.cluster}: at most {self.max_drained} drained"


class Drain(models.Model):
    """Draining one node: proposed (by a triager, or automatically), approved by an admin, run through the cluster's
    scheduler, resumed. Who did each step, when, and the scheduler's answers are kept."""

    class State(models.TextChoices):
        PROPOSED = "proposed"
        REJECTED = "rejected"
        APPROVED = "approved"  # approved, the command queued
        DRAINED = "drained"
        FAILED = "failed"  # the drain command failed, or the circuit breaker refused it
        RESUMED = "resumed"

    ACTIVE = (State.PROPOSED, State.APPROVED, State.DRAINED)  # one at a time per node
    HOLDING = (State.APPROVED, State.DRAINED)  # what the circuit breaker counts

    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="drains")
    node = models.ForeignKey(Node, on_delete=models.CASCADE, related_name="drains")
    attempt = models.ForeignKey(
        Attempt, null=True, blank=True, on_delete=models.SET_NULL, related_name="drains", help_text="Proposed from"
    )
    reason = models.CharField(max_length=200)
    state = models.CharField(max_length=10, choices=State.choices, default=State.PROPOSED)
    automatic = models.BooleanField(default=False, help_text="Proposed by Faultline (a repeat offender)")
    proposed = models.DateTimeField(default=timezone.now)
    proposed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    decided = models.DateTimeField(null=True, blank=True, help_text="When it was approved or rejected")
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    drained = models.DateTimeField(null=True, blank=True)
    drain_answer = models.TextField(blank=True, help_text="The scheduler's answer to the drain")
    resumed = models.DateTimeField(null=True, blank=True)
    resumed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    resume_answer = models.TextField(blank=True, help_text="The scheduler's answer to the resume")

    class Meta:
        ordering = ["-proposed", "-pk"]
        permissions = [("approve_drain", "Approve (and so run) or reject a drain"), ("resume_drain", "Resume a node")]
        constraints = [
            models.UniqueConstraint(
                fields=["node"], condition=models.Q(state__in=["proposed", "approved", "drained"]),
                name="handoffs_one_active_drain_per_node",
            )
        ]  # fmt: skip

    def __str__(self) -> str:
        return f"{self.node}: {self.state}"
