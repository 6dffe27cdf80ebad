"""The attempt list's filters, shared by the REST API and the HTML job list."""

from datetime import UTC

import django_filters
from django import forms
from django.core.exceptions import ValidationError
from django.db.models import Q
from django_filters.fields import IsoDateTimeField
from drf_spectacular.utils import extend_schema_field

from diagnoses.models import Attempt, Diagnosis, Evidence, Job, NodeEvent, Review


class UtcIsoDateTimeField(IsoDateTimeField):
    """An ISO 8601 time, in UTC (databases refuse far-fetched offsets such as +21:54)."""

    def clean(self, value):
        moment = super().clean(value)
        if moment is None:
            return None
        try:
            return moment.astimezone(UTC)
        except OverflowError:
            raise ValidationError("the time is out of range", code="invalid") from None


class UtcIsoDateTimeFilter(django_filters.IsoDateTimeFilter):
    field_class = UtcIsoDateTimeField


class IdField(forms.IntegerField):
    def __init__(self, **kwargs):
        super().__init__(min_value=1, max_value=2**63 - 1, **kwargs)


@extend_schema_field({"type": "integer", "minimum": 1, "maximum": 2**63 - 1})
class IdFilter(django_filters.Filter):
    """A primary key (an integer)."""

    field_class = IdField


NONE = "none"  # the filter value of an attempt without an outcome or a domain


class AttemptFilter(django_filters.FilterSet):
    cluster = django_filters.CharFilter(field_name="cluster__name", help_text="Cluster name")
    job = django_filters.CharFilter(field_name="job__job_id", help_text="The scheduler's job id")
    state = django_filters.CharFilter(field_name="state", lookup_expr="iexact", help_text="Scheduler state")
    analysis_state = django_filters.ChoiceFilter(choices=Attempt.Analysis.choices)
    # the outcome, domain, subdomain and root-cause node are the verdict of record's (Attempt.verdict_*)
    outcome = django_filters.ChoiceFilter(
        method="filter_outcome",
        choices=[*Diagnosis.Outcome.choices, (NONE, "not analysed")],
        help_text="The verdict's outcome; none: not analysed (yet)",
    )
    domain = django_filters.CharFilter(
        method="filter_domain", help_text="The verdict's domain; none: a verdict without one"
    )
    subdomain = django_filters.CharFilter(field_name="verdict_subdomain", help_text="The verdict's subdomain")
    verdict_source = django_filters.ChoiceFilter(
        choices=Attempt.VerdictSource.choices, help_text="review: a person reviewed it; engine: the diagnosis stands"
    )
    node = django_filters.CharFilter(method="filter_node", help_text="Ran on this node")
    root_cause_node = django_filters.CharFilter(
        method="filter_root_cause_node", help_text="The verdict's root cause lies on this node"
    )
    user = django_filters.CharFilter()
    ended_after = UtcIsoDateTimeFilter(field_name="end", lookup_expr="gte", help_text="Ended at or after")
    ended_before = UtcIsoDateTimeFilter(field_name="end", lookup_expr="lt", help_text="Ended before")
    q = django_filters.CharFilter(method="filter_text", help_text="The job's name or id contains this (any case)")

    class Meta:
        model = Attempt
        fields = []

    def filter_outcome(self, queryset, name, value):
        return queryset.filter(verdict_outcome="" if value == NONE else value)

    def filter_domain(self, queryset, name, value):
        if value == NONE:
            return queryset.exclude(verdict_outcome="").filter(verdict_domain="")
        return queryset.filter(verdict_domain=value)

    def filter_node(self, queryset, name, value):
        return queryset.filter(pk__in=Attempt.nodes.through.objects.filter(node__name=value).values("attempt_id"))

    def filter_root_cause_node(self, queryset, name, value):
        links = Attempt.verdict_nodes.through.objects.filter(node__name=value)
        return queryset.filter(pk__in=links.values("attempt_id"))

    def filter_text(self, queryset, name, value):
        return queryset.filter(Q(job__name__icontains=value) | Q(job__job_id__icontains=value))


class JobFilter(django_filters.FilterSet):
    cluster = django_filters.CharFilter(field_name="cluster__name")
    user = django_filters.CharFilter()

    class Meta:
        model = Job
        fields = []


class DiagnosisFilter(django_filters.FilterSet):
    attempt = IdFilter(field_name="attempt_id")
    outcome = django_filters.ChoiceFilter(choices=Diagnosis.Outcome.choices)
    domain = django_filters.CharFilter()
    subdomain = django_filters.CharFilter()
    revision = IdFilter(field_name="revision_id")

    class Meta:
        model = Diagnosis
        fields = []


class EvidenceFilter(django_filters.FilterSet):
    diagnosis = IdFilter(field_name="diagnosis_id")
    node = django_filters.CharFilter(field_name="node__name")
    rule = django_filters.CharFilter()
    role = django_filters.CharFilter()

    class Meta:
        model = Evidence
        fields = []


class NodeEventFilter(EvidenceFilter):
    class Meta:
        model = NodeEvent
        fields = []


class ReviewFilter(django_filters.FilterSet):
    diagnosis = IdFilter(field_name="diagnosis_id")
    attempt = IdFilter(field_name="diagnosis__attempt_id", help_text="Reviews of any of the attempt's diagnoses")
    verdict = django_filters.ChoiceFilter(choices=Review.Verdict.choices)
    withdrawn = django_filters.BooleanFilter(field_name="withdrawn", lookup_expr="isnull", exclude=True)

    class Meta:
        model = Review
        fields = []
