"""Rule sets as versioned text: every revision keeps its YAML, and one revision per rule set is active."""

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone


class RuleSet(models.Model):
    name = models.CharField(max_length=100, unique=True)
    description = models.TextField(blank=True)
    created = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class RuleSetRevision(models.Model):
    """One saved version of a rule set: the whole YAML text (several documents separated by ``---``).

    ``digest`` is the engine's ``RuleSet.digest`` of that text; a diagnosis names the revision that
    produced it, so the same bundle and revision always give the same diagnosis.
    """

    ruleset = models.ForeignKey(RuleSet, on_delete=models.PROTECT, related_name="revisions")
    number = models.PositiveIntegerField()
    text = models.TextField()
    digest = models.CharField(max_length=80)
    parent = models.ForeignKey("self", null=True, blank=True, on_delete=models.PROTECT, related_name="children")
    author = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    message = models.TextField(blank=True)
    created = models.DateTimeField(default=timezone.now)
    active = models.BooleanField(default=False)

    class Meta:
        ordering = ["ruleset", "-number"]
        constraints = [
            models.UniqueConstraint(fields=["ruleset", "number"], name="rules_revision_number_unique"),
            models.UniqueConstraint(fields=["ruleset"], condition=Q(active=True), name="rules_one_active_revision"),
        ]

    def __str__(self) -> str:
        return f"{self.ruleset.name} r{self.number}"


class Activation(models.Model):
    """The audit log: who made which revision of a rule set the active one, when and why.

    A rollback is an activation of an older revision; ``previous`` is the revision it replaced.
    """

    ruleset = models.ForeignKey(RuleSet, on_delete=models.PROTECT, related_name="activations")
    revision = models.ForeignKey(RuleSetRevision, on_delete=models.PROTECT, related_name="activations")
    previous = models.ForeignKey(
        RuleSetRevision, null=True, blank=True, on_delete=models.PROTECT, related_name="replaced_by"
    )
    user = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    message = models.TextField(blank=True)
    created = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created", "-pk"]

    def __str__(self) -> str:
        return f"{self.revision} activated"

    @property
    def is_rollback(self) -> bool:
        return self.previous is not None and self.revision.number < self.previous.number
