"""The job browser (every attempt, filtered and sorted, the filters in the address) and the triage queue
(ambiguous and unattributed attempts nobody reviewed yet, and the recently reviewed)."""

from django.contrib.auth.decorators import login_required
from django.views.decorators.http import require_GET

from diagnoses.filters import NONE, AttemptFilter
from diagnoses.models import Diagnosis
from engine.taxonomy import DOMAINS
from pages import paging, selectors
from pages.views import cursor
from web.htmx import render_page

SORTS = ("end", "name", "user", "state")  # the job list's sortable columns
PAGE_SIZE = 50


@login_required
@require_GET
def job_list(request):
    filters = AttemptFilter(request.GET, queryset=selectors.attempt_table())
    sort = request.GET.get("sort", "")
    sort = sort if sort.lstrip("-") in SORTS else "-end"
    rows = filters.qs if filters.is_valid() else filters.qs.none()  # a wrong filter lists nothing, and says why
    page = paging.seek(rows, sort=sort, size=PAGE_SIZE, **cursor(request))
    context = {
        "filters": filters,
        "page": page,
        "clusters": selectors.cluster_names(),
        "outcomes": [*Diagnosis.Outcome.values, NONE],
        "domains": [*DOMAINS, "ambiguous", NONE],
        "subdomains": sorted({s for subdomains in DOMAINS.values() for s in subdomains}),
    }
    return render_page(request, "pages/job_list.html", context, partials=("attempt-table",), push=True)


@login_required
@require_GET
def triage_queue(request):
    tab = "reviewed" if request.GET.get("tab") == "reviewed" else "open"
    if tab == "open":
        page = paging.seek(selectors.triage_queue(), sort="-end", size=PAGE_SIZE, **cursor(request))
    else:
        page = paging.seek(selectors.reviews_recent(), sort="-created", size=PAGE_SIZE, **cursor(request))
    context = {"tab": tab, "page": page}
    return render_page(request, "pages/triage_queue.html", context, partials=("queue-table",), push=True)
