"""The triage pages (HTML); the API's URLs are in ``api/urls.py``."""

from django.urls import path

from diagnoses import views

app_name = "diagnoses"

urlpatterns = [
    path("", views.overview, name="overview"),
    path("jobs/", views.job_list, name="job-list"),
    path("attempts/<int:pk>/", views.attempt_detail, name="attempt-detail"),
    path("attempts/<int:pk>/review", views.attempt_review, name="attempt-review"),
    path("attempts/<int:pk>/diagnosis.json", views.attempt_diagnosis_json, name="attempt-diagnosis-json"),
    path("attempts/<int:pk>/bundle.tar.gz", views.attempt_bundle, name="attempt-bundle"),
    path("attempts/<int:pk>/evidence/<int:evidence_id>/context", views.evidence_context, name="evidence-context"),
    path("triage/", views.triage_queue, name="triage-queue"),
    path("nodes/<str:cluster>/<str:name>/", views.node_detail, name="node-detail"),
]
