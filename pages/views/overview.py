"""The overview: failed attempts per day by outcome and by domain, the commonest root causes, the nodes
most often at fault, the triage backlog and how often reviewers confirmed the diagnosis."""

from collections import Counter
from datetime import datetime, timedelta

from django.contrib.auth.decorators import login_required
from django.shortcuts import render
from django.utils import timezone
from django.views.decorators.http import require_GET

from diagnoses.models import Diagnosis
from engine.taxonomy import DOMAINS
from pages import charts, paging, selectors

WINDOWS = (7, 30)
TOP = 8  # rows of the overview's top root causes and nodes
OUTCOME_SERIES = [*Diagnosis.Outcome.values, "not analysed"]
DOMAIN_SERIES = [*DOMAINS, "ambiguous", "none", "not analysed"]


@login_required
@require_GET
def overview(request):
    days = 7 if request.GET.get("days") == "7" else 30
    first = timezone.now().date() - timedelta(days=days - 1)
    since = datetime.combine(first, datetime.min.time(), tzinfo=timezone.get_current_timezone())
    day_list = [first + timedelta(days=n) for n in range(days)]
    rows = selectors.failures_by_day(since=since)
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
        "outcomes": charts.stacked_by_day(by_outcome, days=day_list, series=OUTCOME_SERIES),
        "domains": charts.stacked_by_day(by_domain, days=day_list, series=DOMAIN_SERIES),
        "subdomains": sorted(causes.items(), key=lambda item: (-item[1], item[0]))[:TOP],
        "fault_nodes": selectors.top_fault_nodes(since=since, limit=TOP),
        "backlog": min(backlog, paging.COUNT_CAP),
        "backlog_capped": backlog > paging.COUNT_CAP,
        "verdicts": verdicts,
        "reviewed": sum(verdicts.values()),
        "since": first,
    }
    return render(request, "pages/overview.html", context)
