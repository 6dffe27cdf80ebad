from django.urls import path
from rest_framework.routers import DefaultRouter

from api import nodes, notifications, patterns, rulesets, views

app_name = "api"

router = DefaultRouter(trailing_slash=False)
router.register("clusters", views.ClusterViewSet, basename="cluster")
router.register("jobs", views.JobViewSet, basename="job")
router.register("attempts", views.AttemptViewSet, basename="attempt")
router.register("diagnoses", views.DiagnosisViewSet, basename="diagnosis")
router.register("evidence", views.EvidenceViewSet, basename="evidence")
router.register("events", views.NodeEventViewSet, basename="event")
router.register("reviews", views.ReviewViewSet, basename="review")
router.register("rulesets", rulesets.RuleSetViewSet, basename="ruleset")
router.register("revisions", rulesets.RevisionViewSet, basename="revision")
router.register("activations", rulesets.ActivationViewSet, basename="activation")
router.register("notification-rules", notifications.NotificationRuleViewSet, basename="notification-rule")
router.register("deliveries", notifications.DeliveryViewSet, basename="delivery")
router.register("nodes", nodes.NodeViewSet, basename="node")
router.register("drains", nodes.DrainViewSet, basename="drain")
router.register("patterns", patterns.PatternViewSet, basename="pattern")

urlpatterns = [path("analyze", views.AnalyzeView.as_view(), name="analyze"), *router.urls]
