from django.apps import AppConfig


class DiagnosesConfig(AppConfig):
    name = "diagnoses"
    verbose_name = "Diagnoses"
