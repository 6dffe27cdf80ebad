"""What Faultline stores: clusters, jobs and their attempts, the diagnoses of each attempt (one per
rule-set revision), the evidence and node events behind them, and people's reviews.

Raw logs are not here: each attempt's bundle lives on disk under ``FAULTLINE_BUNDLE_ROOT``
(``Attempt.bundle``), and evidence and events point into it (``logs/node02/syslog.log:4182``).
"""

import json

from django.conf import settings
from django.core.validators import MinValueValidator
from django.db import models
from django.db.models import Q
from django.utils import timezone

from diagnoses.cluster_connectors import DEMO_SCHEDULER, UPLOADS, check_cluster, check_source, connector_name
from engine.taxonomy import OUTCOMES
from rules.models import RuleSetRevision


class Cluster(models.Model):
    """A cluster: its scheduler connector and settings, how often discovery polls it, and the state of
    that discovery. Its log and metric sources are ``Source`` rows.

    The state fields are written by the poller only (``diagnoses/services/discovery.py``); a configuration save
    writes ``CONFIGURATION`` only, so it never overwrites a poll that ends meanwhile.
    """

    NO_SCHEDULER = UPLOADS
    CONFIGURATION = ("name", "connector", "scheduler_settings", "enabled", "poll_interval", "gather_delay")

    name = models.CharField(max_length=100, unique=True)
    connector = models.CharField(
        max_length=200,
        default=NO_SCHEDULER,
        help_text="The scheduler connector: slurm, kueue, folder (a watched folder of bundles) or an allowed dotted "
        "path; uploads: no scheduler, attempts arrive as uploaded bundles",
    )
    scheduler_settings = models.JSONField(
        default=dict, blank=True, help_text="The scheduler's settings (docs/connectors.md); secrets by name only"
    )
    enabled = models.BooleanField(default=False, help_text="Discovery polls the scheduler")
    poll_interval = models.PositiveIntegerField(
        default=300, validators=[MinValueValidator(10)], help_text="Seconds between polls"
    )
    gather_delay = models.PositiveIntegerField(
        default=60,
        help_text="Seconds after an attempt ended before its logs and metrics are gathered (shippers lag behind)",
    )
    created = models.DateTimeField(default=timezone.now)

    # Discovery's state.
    cursor = models.TextField(blank=True, help_text="Where the scheduler's next poll starts (its own format)")
    next_poll = models.DateTimeField(null=True, blank=True, help_text="When the next poll is due (backoff included)")
    polling_since = models.DateTimeField(null=True, blank=True, help_text="Set while a poll runs")
    last_poll = models.DateTimeField(null=True, blank=True, help_text="When the last poll ended")
    last_success = models.DateTimeField(null=True, blank=True, help_text="When the last successful poll ended")
    last_error = models.TextField(blank=True, help_text="Why the last failed poll failed")
    failures = models.PositiveIntegerField(default=0, help_text="Failed polls in a row")
    last_found = models.PositiveIntegerField(default=0, help_text="New attempts found by the last successful poll")
    skipped = models.JSONField(default=list, blank=True, help_text="Records the last poll could not use, and why")

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    @property
    def has_scheduler(self) -> bool:
        return self.connector != self.NO_SCHEDULER

    @property
    def has_demo_scheduler(self) -> bool:
        """Its scheduler is the demo's (``connectors/demo.py``): drains are recorded in a file, no node is touched."""
        return self.connector == DEMO_SCHEDULER

    def clean(self):
        self.connector = connector_name(self.connector)
        check_cluster(self)


class Source(models.Model):
    """A log or metric source of a cluster: a connector kind and its settings, and its health.

    The health fields are written by gathering only; a source that failed is not asked again before
    ``retry_after`` (exponential backoff), and the attempts gathered meanwhile report the gap.
    """

    class Role(models.TextChoices):
        LOGS = "logs"
        METRICS = "metrics"

    CONFIGURATION = ("role", "name", "kind", "settings", "position")

    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="sources")
    role = models.CharField(max_length=10, choices=Role.choices)
    name = models.CharField(max_length=100, help_text="Named in the diagnosis's sources")
    kind = models.CharField(max_length=200, help_text="logfiles, loki, prometheus or an allowed dotted path")
    settings = models.JSONField(default=dict, blank=True, help_text="The source's settings; secrets by name only")
    position = models.PositiveIntegerField(default=0)

    failures = models.PositiveIntegerField(default=0, help_text="Failed gathers in a row")
    last_error = models.TextField(blank=True)
    last_failure = models.DateTimeField(null=True, blank=True)
    last_ok = models.DateTimeField(null=True, blank=True)
    retry_after = models.DateTimeField(null=True, blank=True, help_text="Not asked before this (backing off)")

    class Meta:
        ordering = ["cluster", "role", "position", "name"]
        constraints = [models.UniqueConstraint(fields=["cluster", "name"], name="diagnoses_source_unique")]

    def __str__(self) -> str:
        return f"{self.cluster}: {self.name}"

    def clean(self):
        self.kind = connector_name(self.kind)
        check_source(self)


class Node(models.Model):
    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="nodes")
    name = models.CharField(max_length=255)

    class Meta:
        ordering = ["cluster", "name"]
        constraints = [models.UniqueConstraint(fields=["cluster", "name"], name="diagnoses_node_unique")]

    def __str__(self) -> str:
        return self.name


class Job(models.Model):
    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="jobs")
    job_id = models.CharField(max_length=100)
    scheduler = models.CharField(max_length=20)
    name = models.CharField(max_length=255, blank=True)
    user = models.CharField(max_length=100, blank=True, db_index=True)

    class Meta:
        ordering = ["cluster", "job_id"]
        constraints = [models.UniqueConstraint(fields=["cluster", "job_id"], name="diagnoses_job_unique")]

    def __str__(self) -> str:
        return f"{self.cluster}/{self.job_id}"


class Attempt(models.Model):
    """One run of a job: the scheduler's record, where its bundle is, where its analysis stands, and its verdict
    of record.

    The verdict of record is the active review's when the attempt has one (confirmed, corrected or insufficient
    evidence), else its current diagnosis's. It is stored on the row (``verdict_*``) and kept by one service,
    ``diagnoses/services/verdicts.py``, whenever a diagnosis is recorded or a review added or withdrawn: the lists,
    their filters, the overview, the node pages, the API and the exports read these columns, never a subquery.
    """

    class Analysis(models.TextChoices):
        RECEIVED = "received"
        QUEUED = "queued"
        ANALYSING = "analysing"
        ANALYSED = "analysed"
        FAILED = "failed"

    class VerdictSource(models.TextChoices):
        ENGINE = "engine"
        REVIEW = "review"

    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="attempts")
    job = models.ForeignKey(Job, on_delete=models.CASCADE, related_name="attempts")
    number = models.PositiveIntegerField(help_text="0 for the first run; requeues and restarts count up")
    scheduler = models.CharField(max_length=20)
    state = models.CharField(max_length=40, help_text="The scheduler's final state as it spells it")
    start = models.DateTimeField()
    end = models.DateTimeField()
    nodes = models.ManyToManyField(Node, related_name="attempts")
    exit_code = models.CharField(max_length=40, blank=True)
    reason = models.TextField(blank=True)
    user = models.CharField(max_length=100, blank=True)
    name = models.CharField(max_length=255, blank=True)
    record = models.JSONField(help_text="The scheduler's record as received (attempt.json)")
    bundle = models.CharField(max_length=200, unique=True, help_text="The bundle's directory under the bundle root")
    discovery = models.JSONField(
        null=True,
        blank=True,
        help_text="For an attempt found by polling: the scheduler's keys for gathering it (null: it came as a bundle)",
    )
    gathered = models.DateTimeField(
        null=True, blank=True, help_text="When its bundle was written from the cluster's connectors (found by polling)"
    )

    analysis_state = models.CharField(max_length=12, choices=Analysis.choices, default=Analysis.RECEIVED)
    analysis_error = models.TextField(blank=True, help_text="Why the last analysis failed")
    analysis_runs = models.PositiveIntegerField(default=0, help_text="Analyses started (a worker lost counts too)")
    current_diagnosis = models.ForeignKey(
        "Diagnosis", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    received = models.DateTimeField(default=timezone.now)
    state_changed = models.DateTimeField(default=timezone.now)
    analysis_started = models.DateTimeField(null=True, blank=True)

    # The verdict of record (kept by diagnoses/services/verdicts.py; blank while the attempt has no diagnosis).
    verdict_source = models.CharField(
        max_length=6, choices=VerdictSource.choices, blank=True, help_text="review: a person's; engine: the diagnosis's"
    )
    verdict_outcome = models.CharField(max_length=12, choices=[(o, o) for o in OUTCOMES], blank=True)
    verdict_domain = models.CharField(max_length=40, blank=True)
    verdict_subdomain = models.CharField(max_length=80, blank=True)
    verdict_nodes = models.ManyToManyField(
        Node, blank=True, related_name="verdict_of", help_text="The nodes the verdict's root cause lies on"
    )
    verdict_review = models.ForeignKey(
        "Review", null=True, blank=True, on_delete=models.SET_NULL, related_name="+", help_text="The active review"
    )
    engine_disagrees = models.BooleanField(
        default=False, help_text="A diagnosis newer than the active review differs from it and from what it reviewed"
    )
    needs_review = models.BooleanField(
        default=False,
        help_text="In the triage queue: not reviewed and ambiguous or unattributed, or the engine disagrees with "
        "the review",
    )

    class Meta:
        ordering = ["-end", "-pk"]
        constraints = [models.UniqueConstraint(fields=["job", "number"], name="diagnoses_attempt_unique")]
        indexes = [
            models.Index(fields=["cluster", "-end"], name="attempt_cluster_end"),
            # the pages list attempts by (column, id): one index per sortable column (pages.paging)
            models.Index(fields=["-end", "-id"], name="attempt_end_id"),
            models.Index(fields=["state", "id"], name="attempt_state_id"),
            models.Index(fields=["user", "id"], name="attempt_user_id"),
            models.Index(fields=["name", "id"], name="attempt_name_id"),
            models.Index(fields=["analysis_state", "state_changed"], name="attempt_analysis"),
            models.Index(fields=["verdict_outcome", "-end", "-id"], name="attempt_verdict_outcome"),
            models.Index(fields=["verdict_domain", "-end", "-id"], name="attempt_verdict_domain"),
            models.Index(fields=["verdict_subdomain", "-end", "-id"], name="attempt_verdict_subdomain"),
            models.Index(fields=["-end", "-id"], condition=Q(needs_review=True), name="attempt_needs_review"),
        ]

    def __str__(self) -> str:
        return f"{self.job}#{self.number}"


class Diagnosis(models.Model):
    """The engine's diagnosis of one attempt with one rule-set revision (never two for the same pair)."""

    class Outcome(models.TextChoices):
        ATTRIBUTED = "attributed"
        AMBIGUOUS = "ambiguous"
        UNATTRIBUTED = "unattributed"

    attempt = models.ForeignKey(Attempt, on_delete=models.CASCADE, related_name="diagnoses")
    revision = models.ForeignKey(RuleSetRevision, on_delete=models.PROTECT, related_name="diagnoses")
    outcome = models.CharField(max_length=12, choices=Outcome.choices)
    domain = models.CharField(max_length=40, blank=True)
    subdomain = models.CharField(max_length=80, blank=True)
    root_cause_rule = models.CharField(max_length=200, blank=True)
    root_cause_nodes = models.ManyToManyField(Node, blank=True, related_name="root_cause_of")
    document_json = models.TextField(
        help_text="The diagnosis document (docs/diagnosis.md) exactly as the engine wrote it (to_json)"
    )
    created = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created", "-pk"]
        verbose_name_plural = "diagnoses"
        constraints = [
            models.UniqueConstraint(fields=["attempt", "revision"], name="diagnoses_one_per_attempt_revision")
        ]
        indexes = [
            models.Index(fields=["outcome"], name="diagnosis_outcome"),
            models.Index(fields=["domain", "subdomain"], name="diagnosis_domain"),
            models.Index(fields=["subdomain"], name="diagnosis_subdomain"),
        ]

    def __str__(self) -> str:
        return f"{self.attempt}: {self.outcome} {self.subdomain}".rstrip()

    @property
    def document(self) -> dict:
        """The document, keys in the engine's order (kept as text: a JSON column would reorder them)."""
        return json.loads(self.document_json)


class ApproximateTime(models.Model):
    """A line's time as the engine knows it (docs/rules.md, "Time"): exact when the line carries its own, else
    ``time_approx`` with the interval its neighbours give (``time`` is then the earliest bound, or None)."""

    time_approx = models.BooleanField(
        default=False, help_text="The line carries no exact time of its own: time is its earliest bound"
    )
    time_low = models.DateTimeField(null=True, blank=True, help_text="An approximate time's earliest bound")
    time_high = models.DateTimeField(null=True, blank=True, help_text="An approximate time's latest bound")

    class Meta:
        abstract = True


class Evidence(ApproximateTime):
    """One line of a diagnosis's evidence trail, in the document's order."""

    diagnosis = models.ForeignKey(Diagnosis, on_delete=models.CASCADE, related_name="evidence")
    position = models.PositiveIntegerField()
    role = models.CharField(max_length=20)
    rule = models.CharField(max_length=200)
    node = models.ForeignKey(Node, null=True, blank=True, on_delete=models.CASCADE, related_name="evidence")
    source = models.CharField(max_length=100)
    time = models.DateTimeField(null=True, blank=True)
    ref = models.CharField(max_length=500, help_text="Where in the bundle: logs/node02/syslog.log:4182")
    text = models.TextField()
    count = models.PositiveIntegerField(default=1)

    class Meta:
        ordering = ["diagnosis", "position"]
        verbose_name_plural = "evidence"
        constraints = [models.UniqueConstraint(fields=["diagnosis", "position"], name="diagnoses_evidence_position")]
        indexes = [
            models.Index(fields=["rule"], name="evidence_rule"),
            models.Index(fields=["node", "rule"], name="evidence_node_rule"),
        ]

    def __str__(self) -> str:
        return f"{self.rule} {self.ref}"


class NodeEvent(ApproximateTime):
    """An event the engine found while diagnosing (every event in scope, with its role): the timeline."""

    diagnosis = models.ForeignKey(Diagnosis, on_delete=models.CASCADE, related_name="events")
    node = models.ForeignKey(Node, null=True, blank=True, on_delete=models.CASCADE, related_name="events")
    time = models.DateTimeField(null=True, blank=True)
    source = models.CharField(max_length=100)
    kind = models.CharField(max_length=20, help_text="system, app, scheduler, events or metrics")
    rule = models.CharField(max_length=200)
    role = models.CharField(max_length=20, blank=True)
    text = models.TextField()
    ref = models.CharField(max_length=500)
    count = models.PositiveIntegerField(default=1)

    class Meta:
        ordering = ["diagnosis", "time", "pk"]
        indexes = [models.Index(fields=["node", "time"], name="event_node_time")]

    def __str__(self) -> str:
        return f"{self.rule} {self.ref}"


class FlightRecorderSummary(models.Model):
    """What the analysis of an attempt's PyTorch Flight Recorder dumps found, as the attempt page shows it: per
    process group with something pending, the collective it stopped in and its ranks by state as rank ranges, and
    each finding with its culprits' nodes (``engine.flight_recorder.attempt.AttemptDumps.summary``). Recorded with
    the diagnosis, so the page reads one small row instead of reading every rank's dump again."""

    diagnosis = models.OneToOneField(Diagnosis, on_delete=models.CASCADE, related_name="flight_recorder")
    summary = models.JSONField()

    def __str__(self) -> str:
        return f"{self.diagnosis.attempt}: {len(self.summary.get('findings', []))} Flight Recorder findings"


class Review(models.Model):
    """A person's verdict on a diagnosis. The attempt's newest review not withdrawn is its active review (the
    verdict of record); an older one is superseded. Reviews are never deleted: the history stays visible."""

    class Verdict(models.TextChoices):
        CONFIRMED = "confirmed"
        CORRECTED = "corrected"
        INSUFFICIENT_EVIDENCE = "insufficient_evidence"

    diagnosis = models.ForeignKey(Diagnosis, on_delete=models.CASCADE, related_name="reviews")
    reviewer = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="reviews")
    created = models.DateTimeField(default=timezone.now)
    verdict = models.CharField(max_length=24, choices=Verdict.choices)
    corrected_outcome = models.CharField(max_length=12, choices=Diagnosis.Outcome.choices, blank=True)
    corrected_domain = models.CharField(max_length=40, blank=True)
    corrected_subdomain = models.CharField(max_length=80, blank=True)
    corrected_nodes = models.JSONField(default=list, blank=True)
    note = models.TextField(blank=True)
    picked_candidate = models.BooleanField(
        default=False,
        help_text="A correction to one of the diagnosis's own candidates: it agrees with the engine (docs/api.md)",
    )
    withdrawn = models.DateTimeField(null=True, blank=True, help_text="When it was withdrawn (it no longer counts)")
    withdrawn_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )

    class Meta:
        ordering = ["-created", "-pk"]
        constraints = [
            models.CheckConstraint(
                condition=Q(verdict="corrected") & ~Q(corrected_outcome="")
                | ~Q(verdict="corrected") & Q(corrected_outcome="", corrected_domain="", corrected_subdomain=""),
                name="diagnoses_review_correction",
            )
        ]

    def __str__(self) -> str:
        return f"{self.diagnosis.attempt}: {self.verdict}"


class VerdictDay(models.Model):
    """How many failed attempts ended on one day (UTC) on one cluster with one verdict of record and one place in the
    triage queue: the daily rollup that the overview and ``/metrics`` read instead of every attempt. Every attempt
    counts in exactly one row; ``diagnoses/services/verdict_days.py`` moves it from row to row in the transaction that
    changes its verdict, and takes it out when it is deleted (``manage.py verdict_days`` builds the rollup again from
    the attempts)."""

    day = models.DateField()
    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="+")
    outcome = models.CharField(max_length=12, blank=True, help_text="The verdict of record's ('': none yet)")
    domain = models.CharField(max_length=40, blank=True)
    subdomain = models.CharField(max_length=80, blank=True)
    needs_review = models.BooleanField()
    attempts = models.IntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["day", "cluster", "outcome", "domain", "subdomain", "needs_review"],
                name="diagnoses_verdictday_key",
            )
        ]

    def __str__(self) -> str:
        return f"{self.day} {self.cluster_id} {self.outcome}/{self.domain}/{self.subdomain}: {self.attempts}"


class VerdictNodeDay(models.Model):
    """How many failed attempts that ended on one day (UTC) name one node in their verdict of record
    (``Attempt.verdict_nodes``): the daily rollup of the nodes at fault, kept beside ``VerdictDay`` by the same
    service in the same transactions; the overview's nodes most often at fault and /metrics' repeat offenders read
    it."""

    day = models.DateField()
    node = models.ForeignKey(Node, on_delete=models.CASCADE, related_name="+")
    attempts = models.IntegerField(default=0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["day", "node"], name="diagnoses_verdictnodeday_key")]

    def __str__(self) -> str:
        return f"{self.day} node {self.node_id}: {self.attempts}"


class EventCount(models.Model):
    """How many times something happened, by its name and labels: attempts received, analyses run, first diagnoses
    and the time each took, reviews recorded and withdrawn, notifications sent, drain commands run
    (``diagnoses/services/event_counts.py`` lists them). Only ever added to, in the transaction of the event, and
    never taken from: a deletion, a withdrawal or a re-analysis leaves them as they are, so that ``/metrics`` exposes
    them as Prometheus counters, the same in every process and across restarts."""

    name = models.CharField(max_length=60)
    labels = models.CharField(max_length=500, help_text="The labels, a JSON object with its keys sorted")
    value = models.FloatField(default=0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["name", "labels"], name="diagnoses_eventcount_key")]
        permissions = [("read_metrics", "Read /metrics when signed in (a scraper presents the token)")]

    def __str__(self) -> str:
        return f"{self.name} {self.labels}: {self.value:g}"


class Template(models.Model):
    """A log template mined from the attempts' lines with error-like wording (docs/leads.md), and, as a failure
    pattern, what people decided about it. Its ``key`` is a digest of its text (``leads.template_key``): the same
    wording in any attempt, on any cluster, is the same template. Counts grow as attempts are analysed
    (``diagnoses/services/leads.py``); ``attempts`` counts the attempts whose current leads include it."""

    class Status(models.TextChoices):
        NEW = "new", "new"
        KNOWN = "known", "known, no rule wanted"

    key = models.CharField(max_length=16, unique=True)
    text = models.TextField(help_text="The template: its variable parts are <NUM>, <HOST>, <PATH>, ..., <*>")
    kind = models.CharField(max_length=12, help_text="The stream kind it was first seen in (system, app, scheduler)")
    stream = models.CharField(max_length=100, help_text="The stream it was first seen in")
    lines = models.BigIntegerField(default=0, help_text="Lines of it in the attempts analysed")
    normal_lines = models.BigIntegerField(
        default=0, help_text="Of those, lines known to be normal (informational, a rule's context, a success)"
    )
    attempts = models.IntegerField(default=0, help_text="Attempts whose current leads include it")
    first_seen = models.DateTimeField()
    last_seen = models.DateTimeField()
    status = models.CharField(max_length=8, choices=Status.choices, default=Status.NEW)
    assignee = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="patterns"
    )
    changed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    changed = models.DateTimeField(null=True, blank=True, help_text="When its status or assignee last changed")

    class Meta:
        indexes = [
            models.Index(fields=["-attempts", "id"], condition=Q(attempts__gt=0), name="template_patterns"),
            models.Index(fields=["-last_seen", "id"], condition=Q(attempts__gt=0), name="template_patterns_recent"),
        ]

    def __str__(self) -> str:
        return f"{self.key}: {self.text[:80]}"


class TemplateCluster(models.Model):
    """How many attempts of one cluster have a template among their current leads (the patterns page's clusters)."""

    template = models.ForeignKey(Template, on_delete=models.CASCADE, related_name="clusters")
    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="+")
    attempts = models.IntegerField(default=0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["template", "cluster"], name="diagnoses_templatecluster_key")]


class TemplateDay(models.Model):
    """How many attempts first analysed on one day (UTC) had a template among their pattern leads (a new pattern's
    notification: ``Lead.day_attempts``)."""

    template = models.ForeignKey(Template, on_delete=models.CASCADE, related_name="days")
    day = models.DateField()
    attempts = models.IntegerField(default=0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["template", "day"], name="diagnoses_templateday_key")]


class LeadSet(models.Model):
    """The leads of one diagnosis: computed when the rules did not settle the attempt, or when someone asked. What
    the template store held when they were computed is kept with each lead (``Lead.normal``) and here (``templates``:
    how many templates the store held; ``computed``)."""

    PATTERN_LEADS = 3  # the leads whose templates make the attempt's failure patterns
    KEPT = 5  # leads recorded per diagnosis

    diagnosis = models.OneToOneField(Diagnosis, on_delete=models.CASCADE, related_name="lead_set")
    attempt = models.ForeignKey(Attempt, on_delete=models.CASCADE, related_name="lead_sets")
    requested = models.BooleanField(default=False, help_text="Asked for on an attempt the rules settled")
    current = models.BooleanField(default=True, help_text="Of the attempt's current diagnosis")
    templates = models.IntegerField(help_text="Templates in the store when they were computed")
    computed = models.DateTimeField(default=timezone.now)

    class Meta:
        indexes = [models.Index(fields=["attempt"], condition=Q(current=True), name="leadset_current")]


class Lead(models.Model):
    """One lead: a line no rule explains that may show the failure, its template and its score (docs/leads.md)."""

    lead_set = models.ForeignKey(LeadSet, on_delete=models.CASCADE, related_name="leads")
    position = models.PositiveSmallIntegerField(help_text="1 for the best")
    template = models.ForeignKey(Template, on_delete=models.CASCADE, related_name="leads")
    score = models.FloatField()
    why = models.TextField()
    normal = models.BigIntegerField(help_text="The template's normal lines in the store when it was scored")
    node = models.CharField(max_length=255, blank=True)
    stream = models.CharField(max_length=100)
    ref = models.CharField(max_length=500, help_text="file:line in the bundle")
    text = models.TextField()
    time = models.DateTimeField(null=True, blank=True)
    day_attempts = models.IntegerField(
        null=True, blank=True, help_text="A first analysis's pattern lead: the pattern's attempts that day, this one's "
        "included (a new pattern's notification fires when it reaches a rule's threshold)",
    )  # fmt: skip

    class Meta:
        ordering = ["lead_set", "position"]
        constraints = [models.UniqueConstraint(fields=["lead_set", "position"], name="diagnoses_lead_position")]
