from django.apps import AppConfig


class DiagnosesConfig(AppConfig):
    name = "diagnoses"
    verbose_name = "Diagnoses"

    def ready(self):
        from django.db.models.signals import pre_delete

        from diagnoses.models import Attempt
        from diagnoses.services.verdict_days import attempt_deleted

        pre_delete.connect(attempt_deleted, sender=Attempt, dispatch_uid="diagnoses.verdict_days")
