from django.apps import AppConfig


class HandoffsConfig(AppConfig):
    name = "handoffs"
    verbose_name = "Hand-offs"

    def ready(self):
        from diagnoses.signals import diagnosis_recorded
        from handoffs import receivers

        diagnosis_recorded.connect(receivers.diagnosis_recorded, dispatch_uid="handoffs.diagnosis_recorded")
