"""Rule sets, revisions and the activation log in the REST API; writes need the rule editor's permissions
(``rules.permissions``), the same as the pages."""

from drf_spectacular.utils import extend_schema
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response

from api.patterns import BacktestSerializer, revision_backtest
from api.permissions import permission
from engine import RuleSetError
from rules import permissions, selectors, services
from rules.models import Activation, RuleSet, RuleSetRevision

RUN_BATCH = "workbench.add_batchrun"  # the workbench's permission to backtest (workbench/permissions.py)


class RuleSetRevisionSummarySerializer(serializers.ModelSerializer):
    url = serializers.HyperlinkedIdentityField(view_name="api:revision-detail")
    ruleset = serializers.SlugRelatedField(slug_field="name", queryset=RuleSet.objects.all())
    author = serializers.CharField(source="author.username", read_only=True, default=None, allow_null=True)
    parent = serializers.PrimaryKeyRelatedField(
        queryset=RuleSetRevision.objects.all(), required=False, allow_null=True, help_text="The revision it starts from"
    )

    class Meta:
        model = RuleSetRevision
        fields = ["id", "url", "ruleset", "number", "digest", "active", "parent", "author", "message", "created"]
        read_only_fields = ["number", "digest", "active", "created"]


class RuleSetRevisionSerializer(RuleSetRevisionSummarySerializer):
    text = serializers.CharField(trim_whitespace=False, help_text="The rule set's YAML (docs/rules.md)")

    class Meta(RuleSetRevisionSummarySerializer.Meta):
        fields = [*RuleSetRevisionSummarySerializer.Meta.fields, "text"]

    def validate(self, data):
        parent = data.get("parent")
        if parent is not None and parent.ruleset_id != data["ruleset"].pk:
            raise serializers.ValidationError({"parent": "the parent revision belongs to another rule set"})
        return data


class RuleSetSerializer(serializers.ModelSerializer):
    url = serializers.HyperlinkedIdentityField(view_name="api:ruleset-detail", lookup_field="name")
    active_revision = serializers.SerializerMethodField()

    class Meta:
        model = RuleSet
        fields = ["id", "url", "name", "description", "created", "active_revision"]

    def get_active_revision(self, ruleset) -> int | None:
        """The id of the active revision."""
        return ruleset.active_revisions[0].pk if ruleset.active_revisions else None


class ActivationSerializer(serializers.ModelSerializer):
    ruleset = serializers.CharField(source="ruleset.name")
    user = serializers.CharField(source="user.username", default=None, allow_null=True)

    class Meta:
        model = Activation
        fields = ["id", "ruleset", "revision", "previous", "user", "message", "created"]


class ActivateSerializer(serializers.Serializer):
    message = serializers.CharField(required=False, allow_blank=True, default="", help_text="Why")


class RuleSetViewSet(viewsets.ReadOnlyModelViewSet):
    queryset = selectors.rulesets_with_active_revision()
    serializer_class = RuleSetSerializer
    lookup_field = "name"
    lookup_value_regex = "[^/]+"


class RevisionViewSet(mixins.CreateModelMixin, viewsets.ReadOnlyModelViewSet):
    """Revisions of rule sets. Creating one saves a draft (inactive); ``activate`` makes it the active one."""

    queryset = selectors.revisions_all()
    filterset_fields = {"ruleset__name": ["exact"], "active": ["exact"]}

    def get_serializer_class(self):
        return RuleSetRevisionSummarySerializer if self.action == "list" else RuleSetRevisionSerializer

    def get_queryset(self):
        queryset = super().get_queryset()
        return queryset.defer("text") if self.action == "list" else queryset

    def get_permissions(self):
        needed = {"create": permissions.EDIT_RULES, "activate": permissions.ACTIVATE, "backtest": RUN_BATCH}.get(
            self.action
        )
        return [IsAuthenticated(), *([permission(needed)()] if needed else [])]

    def perform_create(self, serializer):
        data = serializer.validated_data
        try:
            serializer.instance = services.revision_create(
                ruleset=data["ruleset"],
                text=data["text"],
                author=self.request.user,
                message=data.get("message", ""),
                parent=data.get("parent"),
            )
        except RuleSetError as exc:
            raise serializers.ValidationError({"text": [str(error) for error in exc.errors]}) from None

    @extend_schema(request=ActivateSerializer, responses={200: ActivationSerializer})
    @action(detail=True, methods=["post"])
    def activate(self, request, pk=None, format=None):  # format: the suffix (.json) DRF passes
        """Make this revision the active one of its rule set (a rollback when it is older); logged."""
        revision = self.get_object()
        body = ActivateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        try:
            activation = services.revision_activate(
                revision=revision, user=request.user, message=body.validated_data["message"]
            )
        except ValueError as exc:
            raise serializers.ValidationError({"revision": str(exc)}) from None
        return Response(ActivationSerializer(activation).data, status=status.HTTP_200_OK)

    @extend_schema(request=BacktestSerializer)
    @action(detail=True, methods=["post"])
    def backtest(self, request, pk=None, format=None):  # format: the suffix (.json) DRF passes
        """This revision tried on the stored attempts matching the filters, synchronously (docs/leads.md)."""
        return revision_backtest(self, request)


class ActivationViewSet(viewsets.ReadOnlyModelViewSet):
    """The audit log: who activated which revision, when, replacing which."""

    queryset = selectors.activation_list()
    serializer_class = ActivationSerializer
    filterset_fields = {"ruleset__name": ["exact"]}
