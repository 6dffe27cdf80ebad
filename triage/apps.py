from django.apps import AppConfig


class TriageConfig(AppConfig):
    """The project itself: loads the Celery application when Django starts, so that tasks queued from any
    process (pages, the API, commands) go to its broker. Importing the settings alone does not load it:
    ``manage.py diagnose`` needs neither Celery nor the app registry (docs/performance.md)."""

    name = "triage"
    verbose_name = "Faultline"

    def ready(self):
        import triage.celery  # noqa: F401
