from django.utils import timezone
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from diagnoses.models import Attempt, Cluster, Diagnosis, Evidence, Job, NodeEvent, Review, Source
from diagnoses.selectors import cluster_status


def node_names():
    return serializers.SlugRelatedField(slug_field="name", many=True, read_only=True)


class SourceSerializer(serializers.ModelSerializer):
    class Meta:
        model = Source
        fields = ["name", "role", "kind", "settings"]


class SourceStatusSerializer(serializers.Serializer):
    name = serializers.CharField()
    role = serializers.CharField()
    kind = serializers.CharField()
    state = serializers.ChoiceField(["ok", "failing", "backing_off", "unused"])
    failures = serializers.IntegerField()
    last_error = serializers.CharField()
    last_failure = serializers.DateTimeField(allow_null=True)
    last_ok = serializers.DateTimeField(allow_null=True)
    retry_after = serializers.DateTimeField(allow_null=True)


class ClusterStatusSerializer(serializers.Serializer):
    state = serializers.ChoiceField(["uploads", "disabled", "polling", "backing_off", "new", "ok"])
    last_poll = serializers.DateTimeField(allow_null=True)
    last_success = serializers.DateTimeField(allow_null=True)
    lag_seconds = serializers.IntegerField(allow_null=True, help_text="Seconds since the last successful poll")
    next_poll = serializers.DateTimeField(allow_null=True)
    failures = serializers.IntegerField(help_text="Failed polls in a row (the cluster backs off)")
    last_error = serializers.CharField()
    last_found = serializers.IntegerField(help_text="New attempts found by the last successful poll")
    skipped = serializers.ListField(child=serializers.CharField(), help_text="Records the last poll could not use")
    pending = serializers.IntegerField(help_text="Attempts queued for analysis or being analysed")
    failed = serializers.IntegerField(help_text="Attempts whose analysis failed")
    sources = SourceStatusSerializer(many=True)


class ClusterSerializer(serializers.ModelSerializer):
    """A cluster's configuration (written by admins) and where its discovery stands (``status``)."""

    sources = SourceSerializer(
        many=True, required=False, help_text="The log and metric sources; when given, they replace the cluster's"
    )
    status = serializers.SerializerMethodField()

    class Meta:
        model = Cluster
        fields = [
            "id", "name", "connector", "scheduler_settings", "enabled", "poll_interval", "gather_delay", "sources",
            "status", "created",
        ]  # fmt: skip
        read_only_fields = ["created"]

    @extend_schema_field(ClusterStatusSerializer)
    def get_status(self, cluster) -> dict:
        return ClusterStatusSerializer(cluster_status(cluster, now=timezone.now())).data


class PollQueuedSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    url = serializers.URLField()


class JobSerializer(serializers.ModelSerializer):
    cluster = serializers.CharField(source="cluster.name")

    class Meta:
        model = Job
        fields = ["id", "cluster", "job_id", "scheduler", "name", "user"]


class RevisionSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    ruleset = serializers.CharField(source="ruleset.name")
    number = serializers.IntegerField()
    digest = serializers.CharField()


class DiagnosisSummarySerializer(serializers.ModelSerializer):
    url = serializers.HyperlinkedIdentityField(view_name="api:diagnosis-detail")
    root_cause_nodes = node_names()

    class Meta:
        model = Diagnosis
        fields = ["id", "url", "outcome", "domain", "subdomain", "root_cause_rule", "root_cause_nodes", "created"]


class DiagnosisSerializer(DiagnosisSummarySerializer):
    attempt = serializers.HyperlinkedRelatedField(view_name="api:attempt-detail", read_only=True)
    revision = RevisionSerializer()
    document = serializers.JSONField(read_only=True, help_text="The diagnosis document (docs/diagnosis.md)")

    class Meta(DiagnosisSummarySerializer.Meta):
        fields = [*DiagnosisSummarySerializer.Meta.fields, "attempt", "revision", "document"]


class VerdictSerializer(serializers.ModelSerializer):
    """The attempt's verdict of record: its active review's when it has one, else its current diagnosis's."""

    source = serializers.ChoiceField(
        Attempt.VerdictSource.choices, source="verdict_source", help_text="review: a person's; engine: the diagnosis's"
    )
    outcome = serializers.CharField(source="verdict_outcome")
    domain = serializers.CharField(source="verdict_domain")
    subdomain = serializers.CharField(source="verdict_subdomain")
    root_cause_nodes = serializers.SlugRelatedField(
        source="verdict_nodes", slug_field="name", many=True, read_only=True
    )
    review = serializers.HyperlinkedRelatedField(
        source="verdict_review", view_name="api:review-detail", read_only=True, allow_null=True
    )
    reviewed_by = serializers.CharField(source="verdict_review.reviewer.username", default=None, allow_null=True)
    reviewed_at = serializers.DateTimeField(source="verdict_review.created", default=None, allow_null=True)
    engine_disagrees = serializers.BooleanField(
        help_text="A newer diagnosis differs from the review and from what it reviewed (back in the triage queue)"
    )

    class Meta:
        model = Attempt
        fields = [
            "source", "outcome", "domain", "subdomain", "root_cause_nodes", "review", "reviewed_by", "reviewed_at",
            "engine_disagrees",
        ]  # fmt: skip


class AttemptSerializer(serializers.ModelSerializer):
    url = serializers.HyperlinkedIdentityField(view_name="api:attempt-detail")
    cluster = serializers.CharField(source="cluster.name")
    job_id = serializers.CharField(source="job.job_id")
    nodes = node_names()
    current_diagnosis = DiagnosisSummarySerializer(allow_null=True)
    verdict = serializers.SerializerMethodField()

    class Meta:
        model = Attempt
        fields = [
            "id", "url", "cluster", "job_id", "number", "scheduler", "state", "start", "end", "nodes", "exit_code",
            "reason", "user", "name", "analysis_state", "analysis_error", "received", "current_diagnosis", "verdict",
            "record",
        ]  # fmt: skip

    @extend_schema_field(VerdictSerializer(allow_null=True))
    def get_verdict(self, attempt) -> dict | None:
        """None while the attempt has no diagnosis."""
        if not attempt.verdict_source:
            return None
        return VerdictSerializer(attempt, context=self.context).data


class AttemptAcceptedSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    url = serializers.URLField(help_text="The attempt in the API")
    page_url = serializers.URLField(help_text="The attempt's page, where its diagnosis shows once analysed")
    analysis_state = serializers.CharField()


class BundleUploadSerializer(serializers.Serializer):
    bundle = serializers.FileField(help_text="A .tar.gz of the bundle directory")


APPROXIMATE = ["time_approx", "time_low", "time_high"]  # a time not read from its line, and its bounds


class EvidenceSerializer(serializers.ModelSerializer):
    node = serializers.CharField(source="node.name", allow_null=True, default=None)

    class Meta:
        model = Evidence
        fields = [
            "id", "diagnosis", "position", "role", "rule", "node", "source", "time", *APPROXIMATE,
            "ref", "text", "count",
        ]  # fmt: skip


class ExcerptLineSerializer(serializers.Serializer):
    line = serializers.IntegerField()
    text = serializers.CharField()


class NodeEventSerializer(serializers.ModelSerializer):
    node = serializers.CharField(source="node.name", allow_null=True, default=None)

    class Meta:
        model = NodeEvent
        fields = [
            "id", "diagnosis", "node", "time", *APPROXIMATE, "source", "kind", "rule", "role", "text", "ref", "count",
        ]  # fmt: skip


class ReviewSerializer(serializers.ModelSerializer):
    """A review; the rules it must keep are the review service's (the attempt page's form keeps the same)."""

    reviewer = serializers.CharField(source="reviewer.username", read_only=True)
    corrected_nodes = serializers.ListField(child=serializers.CharField(max_length=255), required=False)
    withdrawn_by = serializers.CharField(source="withdrawn_by.username", read_only=True, default=None)

    class Meta:
        model = Review
        fields = [
            "id", "diagnosis", "reviewer", "created", "verdict", "corrected_outcome", "corrected_domain",
            "corrected_subdomain", "corrected_nodes", "note", "picked_candidate", "withdrawn", "withdrawn_by",
        ]  # fmt: skip
        read_only_fields = ["created", "picked_candidate", "withdrawn"]
