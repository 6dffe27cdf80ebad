"""A job's page: its attempts in order (the first run, then each requeue or restart), each with its verdict of
record, so a triager sees what happened to the job across attempts."""

from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.views.decorators.http import require_GET

from pages import selectors
from web.htmx import render_page


@login_required
@require_GET
def job_detail(request, cluster: str, job_id: str):
    job = selectors.job_find(cluster=cluster, job_id=job_id)
    if job is None:
        raise Http404("no such job")
    context = {"job": job, "attempts": selectors.job_attempts(job.pk)}
    return render_page(request, "pages/job_detail.html", context)
