"""Leads and failure patterns in the REST API (docs/leads.md): an attempt's leads (and asking for them), the
patterns (list, one, assign, mark known), a rule drafted from a pattern, a revision tried on a pattern's attempts,
the pattern's attempts reanalysed, and a revision backtested over stored attempts. The same selectors and services
as the pages."""

from django.conf import settings
from django.contrib.auth import get_user_model
from drf_spectacular.utils import extend_schema
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response

from api.permissions import permission
from diagnoses import selectors
from diagnoses.filters import AttemptFilter
from diagnoses.models import Attempt, Lead, LeadSet, Template
from diagnoses.services import leads as lead_services
from diagnoses.services.attempts import attempts_reanalyse
from diagnoses.trials import revision_tried
from leads import rule_draft
from rules import permissions as rule_permissions
from rules.models import RuleSetRevision

TRIAGE = "diagnoses.add_review"
REANALYSE = "diagnoses.change_attempt"
TRIED_AT_MOST = 100


class LeadSerializer(serializers.ModelSerializer):
    template = serializers.CharField(source="template.text")
    template_id = serializers.CharField(source="template.key")
    file = serializers.SerializerMethodField()
    line = serializers.SerializerMethodField()

    class Meta:
        model = Lead
        fields = ["position", "score", "why", "text", "node", "stream", "file", "line", "time", "template",
                  "template_id", "normal"]  # fmt: skip

    def get_file(self, lead) -> str:
        return lead.ref.rpartition(":")[0]

    def get_line(self, lead) -> int:
        return int(lead.ref.rpartition(":")[2])


class LeadSetSerializer(serializers.ModelSerializer):
    leads = LeadSerializer(source="lead_list", many=True)

    class Meta:
        model = LeadSet
        fields = ["diagnosis", "requested", "current", "templates", "computed", "leads"]


class PatternSerializer(serializers.ModelSerializer):
    id = serializers.CharField(source="key", read_only=True)
    assignee = serializers.SlugRelatedField(
        slug_field="username", queryset=get_user_model().objects.filter(is_active=True), allow_null=True,
        required=False,
    )  # fmt: skip
    clusters = serializers.SerializerMethodField()

    class Meta:
        model = Template
        fields = ["id", "text", "kind", "stream", "attempts", "lines", "normal_lines", "first_seen", "last_seen",
                  "clusters", "status", "assignee", "changed"]  # fmt: skip
        read_only_fields = ["text", "kind", "stream", "attempts", "lines", "normal_lines", "first_seen", "last_seen",
                            "changed"]  # fmt: skip

    def get_clusters(self, pattern) -> list[str]:
        clusters = self.context.get("clusters")
        return clusters[pattern.pk] if clusters else selectors.pattern_clusters([pattern])[pattern.pk]


class TrialSerializer(serializers.Serializer):
    revision = serializers.PrimaryKeyRelatedField(queryset=RuleSetRevision.objects.all())


class BacktestSerializer(serializers.Serializer):
    ended_after = serializers.DateTimeField(required=False)
    ended_before = serializers.DateTimeField(required=False)
    cluster = serializers.CharField(required=False)
    outcome = serializers.CharField(required=False)
    limit = serializers.IntegerField(required=False, min_value=1)


def tried(rows: list[dict]) -> dict:
    """A trial's answer: how many changed, and each attempt's before, after and changes."""
    return {
        "tried": len(rows),
        "changed": sum(1 for row in rows if row.get("changes")),
        "attempts": [
            {"attempt": row["attempt"].pk, **{k: v for k, v in row.items() if k != "attempt"}} for row in rows
        ],
    }


class PatternViewSet(mixins.UpdateModelMixin, viewsets.ReadOnlyModelViewSet):
    """The failure patterns: ``?status=new`` (default), ``known`` or ``all``; ``?order=attempts`` (default: how many
    attempts each would explain) or ``recent``. ``PATCH`` sets ``assignee`` (a username, or null) and ``status``."""

    serializer_class = PatternSerializer
    lookup_field = "key"
    lookup_value_regex = "[0-9a-f]{16}"
    http_method_names = ["get", "patch", "post", "head", "options"]

    def get_queryset(self):
        if self.action != "list":
            return Template.objects.select_related("assignee")
        status_ = self.request.query_params.get("status", "new")
        return selectors.pattern_list(order=self.request.query_params.get("order", "attempts"),
                                      status=None if status_ == "all" else status_)  # fmt: skip

    def get_permissions(self):
        needed = {"partial_update": TRIAGE, "trial": rule_permissions.EDIT_RULES, "reanalyse": REANALYSE}
        return [IsAuthenticated(), *([permission(needed[self.action])()] if self.action in needed else [])]

    def list(self, request, *args, **kwargs):
        page = self.paginate_queryset(self.filter_queryset(self.get_queryset()))
        context = {**self.get_serializer_context(), "clusters": selectors.pattern_clusters(page)}
        return self.get_paginated_response(PatternSerializer(page, many=True, context=context).data)

    def perform_update(self, serializer):
        data = serializer.validated_data
        try:
            serializer.instance = lead_services.pattern_update(
                pattern=serializer.instance, by=self.request.user, status=data.get("status"),
                **({"assignee": data["assignee"]} if "assignee" in data else {}),
            )  # fmt: skip
        except ValueError as exc:
            raise serializers.ValidationError({"status": str(exc)}) from None

    @action(detail=True, methods=["get"])
    def draft(self, request, key=None, format=None):  # format: the suffix (.json) DRF passes
        """A rule drafted from the pattern's template (its domain and subdomain left to choose) and its attempts."""
        pattern = self.get_object()
        return Response({
            "rule": rule_draft(pattern.text, pattern.key, pattern.kind),
            "kind": pattern.kind,
            "attempts": selectors.pattern_attempt_ids(pattern),
        })  # fmt: skip

    @extend_schema(request=TrialSerializer)
    @action(detail=True, methods=["post"])
    def trial(self, request, key=None, format=None):  # format: the suffix (.json) DRF passes
        """A revision tried on the pattern's attempts (at most 100, newest first): what would change."""
        pattern = self.get_object()
        body = TrialSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        ids = selectors.pattern_attempt_ids(pattern)[:TRIED_AT_MOST]
        attempts = Attempt.objects.filter(pk__in=ids).select_related("current_diagnosis").order_by("-end", "-pk")
        return Response(tried(revision_tried(revision=body.validated_data["revision"], attempts=list(attempts))))

    @extend_schema(request=None)
    @action(detail=True, methods=["post"])
    def reanalyse(self, request, key=None, format=None):  # format: the suffix (.json) DRF passes
        """Queue the analysis of the pattern's attempts with the active rule set."""
        pattern = self.get_object()
        queued = attempts_reanalyse(attempts=Attempt.objects.filter(pk__in=selectors.pattern_attempt_ids(pattern)))
        return Response({"queued": queued}, status=status.HTTP_202_ACCEPTED)


def attempt_leads(view, request) -> Response:
    """``GET /attempts/{id}/leads``: the current diagnosis's leads (404 when none); ``POST``: compute them when the
    rules settled the attempt (triager role)."""
    attempt = view.get_object()
    if request.method == "POST":
        if not request.user.has_perm(TRIAGE):
            view.permission_denied(request, message=f"your role does not allow this (it needs the permission {TRIAGE})")
        if lead_services.leads_request(attempt=attempt) is None:
            raise serializers.ValidationError({"attempt": "it has no diagnosis yet"})
    lead_set = selectors.lead_set_of(attempt.current_diagnosis) if attempt.current_diagnosis else None
    if lead_set is None:
        return Response({"detail": "no leads: the rules settled this attempt (POST computes them)"}, status=404)
    return Response(LeadSetSerializer(lead_set).data)


def revision_backtest(view, request) -> Response:
    """``POST /revisions/{id}/backtest``: the revision tried on the stored attempts matching the filters (the job
    list's), newest first, at most ``limit`` (default and most: ``FAULTLINE_BATCH_MAX_ATTEMPTS``), synchronously."""
    revision = view.get_object()
    body = BacktestSerializer(data=request.data)
    body.is_valid(raise_exception=True)
    filters = {name: value for name, value in body.validated_data.items() if name != "limit"}
    matching = AttemptFilter(filters, queryset=Attempt.objects.all())
    if not matching.is_valid():
        raise serializers.ValidationError(matching.errors)
    limit = min(body.validated_data.get("limit") or settings.FAULTLINE_BATCH_MAX_ATTEMPTS,
                settings.FAULTLINE_BATCH_MAX_ATTEMPTS)  # fmt: skip
    attempts = matching.qs.select_related("current_diagnosis").order_by("-end", "-pk")[:limit]
    return Response(tried(revision_tried(revision=revision, attempts=list(attempts))))
