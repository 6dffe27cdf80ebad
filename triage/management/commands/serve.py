"""``manage.py serve``: the development server of the embedded default (``make run``), with Celery beat's periodic
tasks run by a thread in the serving process (``triage.periodic``), since no beat runs there."""

from django.conf import settings
from django.contrib.staticfiles.management.commands.runserver import Command as RunserverCommand

from triage.celery import app
from triage.periodic import PeriodicTasks


class Command(RunserverCommand):
    help = "Run the development server; without a broker, also run the periodic tasks (notifications, polling)."

    def inner_run(self, *args, **options):
        if settings.CELERY_TASK_ALWAYS_EAGER:  # tasks run in-process: nobody else runs the schedule
            app.loader.import_default_modules()  # the apps' tasks modules, as a worker imports them
            PeriodicTasks(app, settings.CELERY_BEAT_SCHEDULE).start()
            self.stdout.write("Periodic tasks run in this process (no broker).")
        super().inner_run(*args, **options)
