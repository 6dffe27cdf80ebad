"""What the rule workbench keeps: regression cases (reviewed attempts kept as tests of the rules) and the
background runs over stored attempts (backtests and reanalyses)."""

from django.conf import settings
from django.db import models
from django.utils import timezone

from diagnoses.models import Attempt, Review
from rules.models import RuleSetRevision


class RegressionCase(models.Model):
    """A reviewed attempt kept as a test of the rules: a copy of its bundle and the reviewed diagnosis.

    The bundle is copied (under ``cases/`` in the bundle root), so the case outlives the attempt.
    """

    name = models.CharField(max_length=200, unique=True)
    attempt = models.ForeignKey(
        Attempt, null=True, blank=True, on_delete=models.SET_NULL, related_name="regression_cases"
    )
    review = models.ForeignKey(
        Review, null=True, blank=True, on_delete=models.SET_NULL, related_name="regression_cases"
    )
    bundle = models.CharField(max_length=200, unique=True, help_text="The copied bundle under the bundle root")
    expected_outcome = models.CharField(max_length=12)
    expected_domain = models.CharField(max_length=40, blank=True)
    expected_subdomain = models.CharField(max_length=80, blank=True)
    expected_nodes = models.JSONField(default=list, blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    @property
    def expected(self) -> dict:
        return {
            "outcome": self.expected_outcome,
            "domain": self.expected_domain or None,
            "subdomain": self.expected_subdomain or None,
            "nodes": list(self.expected_nodes),
        }


class BatchRun(models.Model):
    """A background run over many stored attempts: a backtest of a revision (nothing stored but this row),
    or a reanalysis with the active revision. Bounded in attempts and time, cancelable, with progress."""

    class Kind(models.TextChoices):
        BACKTEST = "backtest"
        REANALYSIS = "reanalysis"

    class State(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        DONE = "done"
        CANCELLED = "cancelled"
        FAILED = "failed"

    FINISHED = (State.DONE, State.CANCELLED, State.FAILED)

    kind = models.CharField(max_length=12, choices=Kind.choices)
    revision = models.ForeignKey(RuleSetRevision, on_delete=models.PROTECT, related_name="batch_runs")
    filters = models.JSONField(default=dict, blank=True, help_text="The attempt filters (diagnoses.filters)")
    limit = models.PositiveIntegerField(help_text="The most attempts the run examines")
    time_limit = models.PositiveIntegerField(help_text="Seconds after which the run stops where it is")
    state = models.CharField(max_length=10, choices=State.choices, default=State.QUEUED)
    total = models.PositiveIntegerField(default=0)
    done = models.PositiveIntegerField(default=0)
    cancel_requested = models.BooleanField(default=False)
    stopped_reason = models.TextField(blank=True, help_text="Why the run stopped early or failed")
    result = models.JSONField(default=dict, blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created = models.DateTimeField(default=timezone.now)
    started = models.DateTimeField(null=True, blank=True)
    finished = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created", "-pk"]

    def __str__(self) -> str:
        return f"{self.kind} #{self.pk} of {self.revision}"

    @property
    def finished_state(self) -> bool:
        return self.state in self.FINISHED

    @property
    def percent(self) -> int:
        return 100 if self.finished_state and not self.total else int(100 * self.done / self.total) if self.total else 0
