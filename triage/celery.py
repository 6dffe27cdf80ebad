"""The Celery application. Tasks live in the apps' ``tasks.py`` modules."""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "triage.settings")

app = Celery("faultline")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
