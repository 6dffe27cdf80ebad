"""The triage pages (HTML); the API's URLs are in ``api/urls.py``, the rule workbench's in ``workbench/urls.py``."""

from django.urls import path

from pages.views import (
    attempts,
    changes,
    clusters,
    exports,
    handoffs,
    jobs,
    lists,
    nodes,
    overview,
    patterns,
    search,
    uploads,
)

app_name = "pages"

urlpatterns = [
    path("", overview.overview, name="overview"),
    path("jobs/", lists.job_list, name="job-list"),
    path("jobs/export.<str:format>", exports.job_export, name="job-export"),
    path("jobs/<str:cluster>/<path:job_id>/", jobs.job_detail, name="job-detail"),
    path("upload/", uploads.attempt_upload, name="upload"),
    path("attempts/<int:pk>/", attempts.attempt_detail, name="attempt-detail"),
    path("attempts/<int:pk>/changes", changes.attempt_changes, name="attempt-changes"),
    path("attempts/<int:pk>/review", attempts.attempt_review, name="attempt-review"),
    path("attempts/<int:pk>/reviews/<int:review_id>/withdraw", attempts.review_withdraw, name="review-withdraw"),
    path("review/subdomains", attempts.review_subdomains, name="review-subdomains"),
    path("attempts/<int:pk>/gather", attempts.attempt_gather_again, name="attempt-gather"),
    path("attempts/<int:pk>/diagnosis.json", attempts.attempt_diagnosis_json, name="attempt-diagnosis-json"),
    path("attempts/<int:pk>/bundle.tar.gz", attempts.attempt_bundle, name="attempt-bundle"),
    path("attempts/<int:pk>/evidence/<int:evidence_id>/context", attempts.evidence_context, name="evidence-context"),
    path("attempts/<int:pk>/events/<int:event_id>/context", attempts.event_context, name="event-context"),
    path("attempts/<int:pk>/leads/<int:lead_id>/context", attempts.lead_context, name="lead-context"),
    path("attempts/<int:pk>/leads", attempts.attempt_leads, name="attempt-leads"),
    path("patterns/", patterns.pattern_list, name="pattern-list"),
    path("patterns/<str:key>/", patterns.pattern_detail, name="pattern-detail"),
    path("triage/", lists.triage_queue, name="triage-queue"),
    path("search/", search.search, name="search"),
    path("nodes/", nodes.node_list, name="node-list"),
    path("nodes/<str:cluster>/<path:name>/", nodes.node_detail, name="node-detail"),  # node names may hold "/"
    path("clusters/", clusters.cluster_status, name="cluster-status"),
    path("notifications/", handoffs.notification_list, name="notification-list"),
    path("notifications/rules/", handoffs.notification_rule_save, name="notification-rule-add"),
    path("notifications/rules/<int:pk>", handoffs.notification_rule_save, name="notification-rule-change"),
    path("notifications/rules/<int:pk>/delete", handoffs.notification_rule_delete, name="notification-rule-delete"),
    path("notifications/rules/<int:pk>/test", handoffs.notification_rule_test, name="notification-rule-test"),
    path("drains/", handoffs.drain_list, name="drain-list"),
    path("drains/propose", handoffs.drain_propose, name="drain-propose"),
    path("drains/<int:pk>/approve", handoffs.drain_approve, name="drain-approve"),
    path("drains/<int:pk>/reject", handoffs.drain_reject, name="drain-reject"),
    path("drains/<int:pk>/resume", handoffs.drain_resume, name="drain-resume"),
    path("drains/policies/<str:cluster>", handoffs.drain_policy, name="drain-policy"),
]
