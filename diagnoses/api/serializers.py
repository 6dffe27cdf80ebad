from rest_framework import serializers

from diagnoses.models import Attempt, Cluster, Diagnosis, Evidence, Job, NodeEvent, Review
from rules.engine.taxonomy import DOMAINS


def node_names():
    return serializers.SlugRelatedField(slug_field="name", many=True, read_only=True)


class ClusterSerializer(serializers.ModelSerializer):
    class Meta:
        model = Cluster
        fields = ["id", "name", "connector", "created"]


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
    document = serializers.JSONField(read_only=True, help_text="The diagnosis document (CONTRACTS.md section 2)")

    class Meta(DiagnosisSummarySerializer.Meta):
        fields = [*DiagnosisSummarySerializer.Meta.fields, "attempt", "revision", "document"]


class AttemptSerializer(serializers.ModelSerializer):
    url = serializers.HyperlinkedIdentityField(view_name="api:attempt-detail")
    cluster = serializers.CharField(source="cluster.name")
    job_id = serializers.CharField(source="job.job_id")
    nodes = node_names()
    current_diagnosis = DiagnosisSummarySerializer(allow_null=True)

    class Meta:
        model = Attempt
        fields = [
            "id", "url", "cluster", "job_id", "number", "scheduler", "state", "start", "end", "nodes", "exit_code",
            "reason", "user", "name", "analysis_state", "analysis_error", "received", "current_diagnosis", "record",
        ]  # fmt: skip


class AttemptAcceptedSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    url = serializers.URLField()
    analysis_state = serializers.CharField()


class BundleUploadSerializer(serializers.Serializer):
    bundle = serializers.FileField(help_text="A .tar.gz of the bundle directory")


class EvidenceSerializer(serializers.ModelSerializer):
    node = serializers.CharField(source="node.name", allow_null=True, default=None)

    class Meta:
        model = Evidence
        fields = ["id", "diagnosis", "position", "role", "rule", "node", "source", "time", "ref", "text", "count"]


class ExcerptLineSerializer(serializers.Serializer):
    line = serializers.IntegerField()
    text = serializers.CharField()


class NodeEventSerializer(serializers.ModelSerializer):
    node = serializers.CharField(source="node.name", allow_null=True, default=None)

    class Meta:
        model = NodeEvent
        fields = ["id", "diagnosis", "node", "time", "source", "kind", "rule", "role", "text", "ref", "count"]


class ReviewSerializer(serializers.ModelSerializer):
    reviewer = serializers.CharField(source="reviewer.username", read_only=True)
    corrected_nodes = serializers.ListField(child=serializers.CharField(max_length=255), required=False)

    class Meta:
        model = Review
        fields = [
            "id", "diagnosis", "reviewer", "created", "verdict", "corrected_outcome", "corrected_domain",
            "corrected_subdomain", "corrected_nodes", "note",
        ]  # fmt: skip
        read_only_fields = ["created"]

    def validate(self, data):
        corrected = data["verdict"] == Review.Verdict.CORRECTED
        fields = ("corrected_outcome", "corrected_domain", "corrected_subdomain", "corrected_nodes")
        if corrected and not data.get("corrected_outcome"):
            raise serializers.ValidationError({"corrected_outcome": "a correction names the corrected outcome"})
        if not corrected:
            for name in fields:
                if data.get(name):
                    raise serializers.ValidationError({name: "only a correction (verdict 'corrected') sets this"})
        domain = data.get("corrected_domain")
        if domain and domain not in DOMAINS:
            raise serializers.ValidationError({"corrected_domain": f"unknown domain {domain!r}"})
        return data
