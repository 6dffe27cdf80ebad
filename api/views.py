"""The REST API of the store: clusters, jobs, attempts, diagnoses, evidence, events, reviews, and the stateless
analyse endpoint. Resource viewsets and a few actions, all thin: they call selectors and services."""

import shutil

from django.conf import settings
from django.core.exceptions import NON_FIELD_ERRORS
from django.core.exceptions import ValidationError as DjangoValidationError
from django.http import HttpResponse
from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import APIException, ErrorDetail, NotFound, ValidationError
from rest_framework.parsers import MultiPartParser
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.settings import api_settings
from rest_framework.views import APIView

from api.patterns import LeadSetSerializer, attempt_leads
from api.permissions import permission
from api.serializers import (
    AttemptAcceptedSerializer,
    AttemptSerializer,
    BundleUploadSerializer,
    ClusterSerializer,
    DiagnosisSerializer,
    EvidenceSerializer,
    ExcerptLineSerializer,
    JobSerializer,
    NodeEventSerializer,
    PollQueuedSerializer,
    ReviewSerializer,
)
from api.uploads import Conflict, Deadline, bundle_stream, history_wanted, rejected
from diagnoses import bundle_store, selectors
from diagnoses.filters import (
    AttemptFilter,
    DiagnosisFilter,
    EvidenceFilter,
    JobFilter,
    NodeEventFilter,
    ReviewFilter,
)
from diagnoses.services import attempts, clusters, discovery, reviews
from engine import to_json
from engine.bundle import BundleError, load_bundle
from rules.engine_limits import bundle_limits
from rules.selectors import engine_current

BUNDLE_BODY = {"application/gzip": OpenApiTypes.BINARY, "multipart/form-data": BundleUploadSerializer}


def accepted(attempt, request) -> Response:
    """202 with the attempt's URL (also in ``Location``), where its analysis will show, and its page's."""
    url = request.build_absolute_uri(reverse("api:attempt-detail", args=[attempt.pk]))
    page_url = request.build_absolute_uri(reverse("pages:attempt-detail", args=[attempt.pk]))
    body = {"id": attempt.pk, "url": url, "page_url": page_url, "analysis_state": attempt.analysis_state}
    return Response(body, status=status.HTTP_202_ACCEPTED, headers={"Location": url})


class ClusterViewSet(mixins.CreateModelMixin, mixins.UpdateModelMixin, viewsets.ReadOnlyModelViewSet):
    """Clusters: their connectors (configured by admins) and the status of their discovery."""

    queryset = selectors.cluster_status_list()
    serializer_class = ClusterSerializer

    def get_permissions(self):
        needed = {
            "create": "diagnoses.add_cluster",
            "update": "diagnoses.change_cluster",
            "partial_update": "diagnoses.change_cluster",
            "poll": "diagnoses.change_cluster",
        }.get(self.action)
        return [IsAuthenticated(), *([permission(needed)()] if needed else [])]

    def perform_create(self, serializer):
        self.configure(serializer, cluster=None)

    def perform_update(self, serializer):
        self.configure(serializer, cluster=serializer.instance)

    def configure(self, serializer, *, cluster):
        fields = dict(serializer.validated_data)
        sources = fields.pop("sources", None)
        try:
            cluster = clusters.cluster_configure(cluster=cluster, sources=sources, **fields)
        except DjangoValidationError as exc:
            raise configuration_error(exc) from None
        serializer.instance = selectors.cluster_status_list().get(pk=cluster.pk)

    @extend_schema(request=None, responses={202: PollQueuedSerializer})
    @action(detail=True, methods=["post"])
    def poll(self, request, pk=None, format=None):  # format: the suffix (.json) DRF passes
        """Queue a poll of the cluster's scheduler now, whatever its schedule or backoff."""
        cluster = self.get_object()
        if not cluster.has_scheduler:
            raise ValidationError(
                {"connector": f"the cluster has no scheduler to poll (its connector is {cluster.connector})"}
            )
        discovery.cluster_poll_now(cluster=cluster)
        url = request.build_absolute_uri(reverse("api:cluster-detail", args=[cluster.pk]))
        return Response({"id": cluster.pk, "url": url}, status=status.HTTP_202_ACCEPTED, headers={"Location": url})


def configuration_error(exc: DjangoValidationError) -> ValidationError:
    """A configuration's problems as the API names them: ``scheduler_settings.path_map``, ``sources.1.kind``."""
    detail: dict[str, list[ErrorDetail]] = {}
    for field, errors in exc.error_dict.items():
        path = field.removesuffix(NON_FIELD_ERRORS).rstrip(".") or api_settings.NON_FIELD_ERRORS_KEY
        for error in errors:
            setting = (error.params or {}).get("setting")
            key = f"{path}.{setting}" if setting else path
            detail.setdefault(key, []).extend(ErrorDetail(message, code=error.code or "invalid") for message in error)
    return ValidationError(detail)


class JobViewSet(viewsets.ReadOnlyModelViewSet):
    queryset = selectors.job_list()
    serializer_class = JobSerializer
    filterset_class = JobFilter


class AttemptViewSet(viewsets.ReadOnlyModelViewSet):
    queryset = selectors.attempt_list()
    serializer_class = AttemptSerializer
    filterset_class = AttemptFilter
    parser_classes = [MultiPartParser]

    def get_permissions(self):
        needed = {"create": "diagnoses.add_attempt", "reanalyse": "diagnoses.change_attempt"}.get(self.action)
        return [IsAuthenticated(), *([permission(needed)()] if needed else [])]

    @extend_schema(
        request=BUNDLE_BODY,
        parameters=[OpenApiParameter("history", bool, description="Write the store's history of the attempt's nodes "
                                     "and job into a bundle without history/ (default false)")],
        responses={202: AttemptAcceptedSerializer, 409: OpenApiResponse(description="The attempt is already stored")},
    )  # fmt: skip
    def create(self, request, format=None):  # format: the suffix (.json) DRF passes
        """Store an attempt from its bundle (.tar.gz) and queue its analysis."""
        try:
            attempt = attempts.attempt_ingest_archive(stream=bundle_stream(request), history=history_wanted(request))
        except bundle_store.BundleRejected as exc:
            raise rejected(exc) from None
        except attempts.DuplicateAttempt as exc:
            raise Conflict(str(exc)) from None
        return accepted(attempt, request)

    @extend_schema(request=None, responses={202: AttemptAcceptedSerializer})
    @action(detail=True, methods=["post"])
    def reanalyse(self, request, pk=None, format=None):  # format: the suffix (.json) DRF passes
        """Queue the attempt's analysis again with the active rule set."""
        attempt = self.get_object()
        attempts.attempt_reanalyse(attempt=attempt)
        return accepted(attempt, request)

    @extend_schema(request=None, responses={200: LeadSetSerializer})
    @action(detail=True, methods=["get", "post"])
    def leads(self, request, pk=None, format=None):  # format: the suffix (.json) DRF passes
        """The leads of the attempt's current diagnosis (docs/leads.md); POST computes them when the rules settled
        it (triager role)."""
        return attempt_leads(self, request)

    @extend_schema(request=None, responses={200: OpenApiTypes.OBJECT})
    @action(detail=True)
    def changes(self, request, pk=None, format=None):  # format: the suffix (.json) DRF passes
        """What changed since the attempt's job last worked: the comparison with its last good attempt (the nodes
        added and removed, the software versions with the changed ones first, the time to the first error, the log
        templates the good one never printed), as the attempt's "What changed" page shows it; 404 without one."""
        try:
            changes = selectors.attempt_changes(self.get_object())
        except (selectors.NotGathered, BundleError) as exc:
            raise Unreadable(str(exc)) from None
        if changes is None:
            raise NotFound("No earlier attempt of this job, nor of its name and user, succeeded.")
        return Response(changes)


class Unreadable(APIException):
    status_code = 409
    default_detail = "A bundle of the comparison cannot be read."
    default_code = "unreadable"


class DiagnosisViewSet(viewsets.ReadOnlyModelViewSet):
    queryset = selectors.diagnosis_list()
    serializer_class = DiagnosisSerializer
    filterset_class = DiagnosisFilter


class EvidenceViewSet(viewsets.ReadOnlyModelViewSet):
    queryset = selectors.evidence_list()
    serializer_class = EvidenceSerializer
    filterset_class = EvidenceFilter

    @extend_schema(
        parameters=[OpenApiParameter("context", int, description="Lines before and after (0-50, default 5)")],
        responses={200: ExcerptLineSerializer(many=True)},
        filters=False,
    )
    @action(detail=True)
    def excerpt(self, request, pk=None, format=None):  # format: the suffix (.json) DRF passes
        """The bundle's lines around this piece of evidence."""
        evidence = self.get_object()
        context = request.query_params.get("context", "5")
        context = min(50, int(context)) if context.isdigit() else 5
        lines = selectors.bundle_excerpt(attempt=evidence.diagnosis.attempt, ref=evidence.ref, context=context)
        return Response(ExcerptLineSerializer(lines, many=True).data)


class NodeEventViewSet(viewsets.ReadOnlyModelViewSet):
    queryset = selectors.node_event_list()
    serializer_class = NodeEventSerializer
    filterset_class = NodeEventFilter


class ReviewViewSet(mixins.CreateModelMixin, viewsets.ReadOnlyModelViewSet):
    queryset = selectors.review_list()
    serializer_class = ReviewSerializer
    filterset_class = ReviewFilter

    def get_permissions(self):
        if self.action in ("create", "withdraw"):
            return [IsAuthenticated(), permission("diagnoses.add_review")()]
        return [IsAuthenticated()]

    def perform_create(self, serializer):
        """Through the review service, as the attempt page's form: the same rules, the same refusals."""
        try:
            review = reviews.review_create(reviewer=self.request.user, **serializer.validated_data)
        except DjangoValidationError as exc:
            raise review_error(exc) from None
        serializer.instance = review

    @extend_schema(request=None, responses={200: ReviewSerializer})
    @action(detail=True, methods=["post"])
    def withdraw(self, request, pk=None, format=None):  # format: the suffix (.json) DRF passes
        """Withdraw the review: it stays listed (``withdrawn``), no longer counts, and the attempt's verdict falls
        back to the review before it or to its diagnosis."""
        try:
            review = reviews.review_withdraw(review=self.get_object(), by=request.user)
        except DjangoValidationError as exc:
            raise review_error(exc) from None
        return Response(self.get_serializer(review).data)


def review_error(exc: DjangoValidationError) -> ValidationError:
    """The review service's refusal as a 400 naming the field."""
    if hasattr(exc, "error_dict"):
        return ValidationError(exc.message_dict)
    return ValidationError({api_settings.NON_FIELD_ERRORS_KEY: exc.messages})


class AnalyzeView(APIView):
    """The stateless Attribution Service: the diagnosis of a posted bundle, exactly as
    ``manage.py diagnose`` prints it; nothing is stored."""

    parser_classes = [MultiPartParser]

    @extend_schema(request=BUNDLE_BODY, responses={200: OpenApiTypes.OBJECT})
    def post(self, request):
        deadline = Deadline(settings.FAULTLINE_ANALYZE_TIME_LIMIT)
        limits = bundle_limits()
        staging = bundle_store.stage()
        try:
            try:
                bundle_store.extract_archive(bundle_stream(request), staging)
                bundle = bundle_store.locate(staging)
                bundle_store.read_attempt(bundle)
                context = load_bundle(bundle, limits=limits)
            except BundleError as exc:
                raise rejected(bundle_store.BundleRejected(str(exc))) from None
            except bundle_store.BundleRejected as exc:
                raise rejected(exc) from None
            deadline()
            diagnosis = engine_current().diagnose(context, limits=limits, interrupt=deadline)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        return HttpResponse(to_json(diagnosis), content_type="application/json")
