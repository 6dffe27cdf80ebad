"""The overview: the latest failures, failed attempts per day by outcome and by domain, the commonest root causes,
the nodes most often at fault, the triage backlog and how often reviewers agreed with the engine."""

from collections import Counter
from datetime import date, datetime, timedelta
from urllib.parse import urlencode

from django.contrib.auth.decorators import login_required
from django.shortcuts import render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET

from diagnoses.filters import NONE
from diagnoses.models import Diagnosis
from engine.taxonomy import DOMAINS
from pages import charts, paging, selectors

WINDOWS = (7, 30)
TOP = 8  # rows of the overview's top root causes and nodes
RECENT = 10  # the latest failures listed
OUTCOME_SERIES = [*Diagnosis.Outcome.values, "not analysed"]
DOMAIN_SERIES = [*DOMAINS, "ambiguous", "none", "not analysed"]


@login_required
@require_GET
def overview(request):
    days = 7 if request.GET.get("days") == "7" else 30
    first = timezone.now().date() - timedelta(days=days - 1)
    since = datetime.combine(first, datetime.min.time(), tzinfo=timezone.get_current_timezone())
    day_list = [first + timedelta(days=n) for n in range(days)]
    rows = selectors.failures_by_day(first=first)
    by_outcome = charts.count_by_day(rows, lambda row: row["outcome"] or "not analysed")
    by_domain = charts.count_by_day(rows, lambda row: row["domain"] or ("none" if row["outcome"] else "not analysed"))
    causes = Counter()
    for row in rows:
        if row["outcome"] == Diagnosis.Outcome.ATTRIBUTED:
            causes[row["domain"], row["subdomain"]] += row["count"]
    verdicts = selectors.review_verdicts(since=since)
    backlog = selectors.backlog_size()
    context = {
        "days": days,
        "windows": WINDOWS,
        "outcomes": charts.stacked_by_day(by_outcome, days=day_list, series=OUTCOME_SERIES, link=_list_of("outcome")),
        "domains": charts.stacked_by_day(by_domain, days=day_list, series=DOMAIN_SERIES, link=_list_of("domain")),
        "subdomains": sorted(causes.items(), key=lambda item: (-item[1], item[0]))[:TOP],
        "fault_nodes": selectors.top_fault_nodes(first=first, limit=TOP),
        "recent_page": paging.one_page(selectors.failures_recent(limit=RECENT)),
        "backlog": min(backlog, paging.COUNT_CAP),
        "backlog_capped": backlog > paging.COUNT_CAP,
        "verdicts": verdicts,
        "reviewed": sum(verdicts.values()),
        "agreed": verdicts["confirmed"] + verdicts["candidate"],  # a pick of its own candidate agrees with it
        "since": first,
        "window": _window(first),
    }
    return render(request, "pages/overview.html", context)


def _window(first: date, last: date | None = None) -> dict[str, str]:
    """The job list's filters of the days ``first`` to ``last`` (to now without ``last``), in the server's zone
    (the form's ``datetime-local`` fields show them as they are)."""
    window = {"ended_after": f"{first.isoformat()}T00:00"}
    if last is not None:
        window["ended_before"] = f"{(last + timedelta(days=1)).isoformat()}T00:00"
    return window


def _list_of(field: str):
    """Where a chart's bar leads: the job list of that day's attempts of that series (``field``: outcome or
    domain; "not analysed" is the outcome ``none``)."""

    def link(day: date, series: str) -> str:
        chosen = {"outcome": NONE} if series == "not analysed" else {field: series}
        return f"{reverse('pages:job-list')}?{urlencode({**chosen, **_window(day, day)})}"

    return link
