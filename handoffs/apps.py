from django.apps import AppConfig


class HandoffsConfig(AppConfig):
    name = "handoffs"
    verbose_name = "Hand-offs"
