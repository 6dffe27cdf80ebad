"""The API of the node inventory and the drains (read by everyone signed in): each node with the attempts it ran,
how often the verdicts of record named it the root cause, and its active drain; every drain with who proposed,
decided and resumed it. Drains are proposed, approved and resumed on the pages (``/drains/``)."""

from datetime import timedelta

import django_filters
from django.conf import settings
from django.utils import timezone
from rest_framework import serializers, viewsets

from diagnoses.models import Node
from diagnoses.selectors import nodes_named_root_cause
from handoffs import selectors
from handoffs.models import Drain


class NodeFilter(django_filters.FilterSet):
    cluster = django_filters.CharFilter(field_name="cluster__name", help_text="The cluster's name")
    name = django_filters.CharFilter(help_text="The node's name, exactly")
    q = django_filters.CharFilter(field_name="name", lookup_expr="icontains", help_text="Part of the node's name")
    at_fault = django_filters.BooleanFilter(method="filter_at_fault", help_text="Named root cause at least once")

    def filter_at_fault(self, queryset, name, value):
        named = queryset.filter(pk__in=nodes_named_root_cause())
        return named if value else queryset.exclude(pk__in=nodes_named_root_cause())


class NodeSerializer(serializers.Serializer):
    id = serializers.IntegerField(source="pk")
    cluster = serializers.CharField(source="cluster.name")
    name = serializers.CharField()
    attempts = serializers.IntegerField(source="attempt_count", help_text="Attempts that ran on it")
    last_end = serializers.DateTimeField(allow_null=True, help_text="When the last of them ended")
    root_causes = serializers.IntegerField(help_text="Attempts whose verdict of record names it the root cause")
    recent_causes = serializers.IntegerField(
        help_text="Of them, those that ended in the repeat-offender window (FAULTLINE_REPEAT_OFFENDER_DAYS)"
    )
    repeat_offender = serializers.SerializerMethodField()
    drain = serializers.SerializerMethodField(help_text="Its active drain (proposed, approved or drained), or null")

    def get_repeat_offender(self, node) -> bool:
        return node.recent_causes >= settings.FAULTLINE_REPEAT_OFFENDER_COUNT

    def get_drain(self, node) -> dict | None:
        return {"id": node.drain_id, "state": node.drain_state} if node.drain_id else None


class NodeViewSet(viewsets.ReadOnlyModelViewSet):
    """The node inventory, ordered by cluster and name."""

    queryset = Node.objects.none()  # the schema's model; each request reads get_queryset's
    serializer_class = NodeSerializer
    filterset_class = NodeFilter

    def get_queryset(self):
        window = timedelta(days=settings.FAULTLINE_REPEAT_OFFENDER_DAYS)
        return selectors.node_inventory(since=timezone.now() - window).order_by("cluster__name", "name", "pk")


class DrainFilter(django_filters.FilterSet):
    cluster = django_filters.CharFilter(field_name="cluster__name", help_text="The cluster's name")
    node = django_filters.CharFilter(field_name="node__name", help_text="The node's name")
    state = django_filters.MultipleChoiceFilter(choices=Drain.State.choices)
    active = django_filters.BooleanFilter(method="filter_active", help_text="Proposed, approved or drained")

    def filter_active(self, queryset, name, value):
        return queryset.filter(state__in=Drain.ACTIVE) if value else queryset.exclude(state__in=Drain.ACTIVE)

    class Meta:
        model = Drain
        fields = []


class DrainSerializer(serializers.ModelSerializer):
    cluster = serializers.CharField(source="cluster.name")
    node = serializers.CharField(source="node.name")
    node_id = serializers.IntegerField()
    proposed_by = serializers.CharField(source="proposed_by.username", default=None)
    decided_by = serializers.CharField(source="decided_by.username", default=None)
    resumed_by = serializers.CharField(source="resumed_by.username", default=None)

    class Meta:
        model = Drain
        fields = [
            "id", "cluster", "node", "node_id", "attempt", "reason", "state", "automatic", "proposed", "proposed_by",
            "decided", "decided_by", "drained", "drain_answer", "resumed", "resumed_by", "resume_answer",
        ]  # fmt: skip


class DrainViewSet(viewsets.ReadOnlyModelViewSet):
    """Drains, newest first: proposed, rejected, approved, drained, failed or resumed."""

    queryset = selectors.drain_table()
    serializer_class = DrainSerializer
    filterset_class = DrainFilter
