"""The job list's exports: the attempts that match the list's filters, as CSV or JSON, each with its id and page's URL,
its verdict of record (from the attempt's row, like the list) and the engine's diagnosis beside it. Streamed, newest
first."""

import csv
import json

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse, StreamingHttpResponse
from django.urls import reverse
from django.views.decorators.http import require_GET

from diagnoses.filters import AttemptFilter
from pages import selectors

COLUMNS = (
    "attempt_id", "url", "cluster", "job_id", "attempt", "name", "user", "state", "end", "verdict_source", "outcome",
    "domain", "subdomain", "root_cause_nodes", "reviewed_by", "reviewed_at", "engine_outcome", "engine_domain",
    "engine_subdomain", "engine_disagrees",
)  # fmt: skip
CHUNK = 2000
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")  # a spreadsheet would read such a cell as a formula


def export_row(attempt, page_url) -> dict:
    """The attempt's row; ``page_url(path)``: the absolute URL of a path of this site."""
    review, diagnosis = attempt.verdict_review, attempt.current_diagnosis
    return {
        "attempt_id": attempt.pk,
        "url": page_url(reverse("pages:attempt-detail", args=[attempt.pk])),
        "cluster": attempt.cluster.name,
        "job_id": attempt.job.job_id,
        "attempt": attempt.number,
        "name": attempt.name,
        "user": attempt.user,
        "state": attempt.state,
        "end": attempt.end.isoformat(),
        "verdict_source": attempt.verdict_source,
        "outcome": attempt.verdict_outcome,
        "domain": attempt.verdict_domain,
        "subdomain": attempt.verdict_subdomain,
        "root_cause_nodes": sorted(node.name for node in attempt.verdict_nodes.all()),
        "reviewed_by": review.reviewer.get_username() if review else None,
        "reviewed_at": review.created.isoformat() if review else None,
        "engine_outcome": diagnosis.outcome if diagnosis else None,
        "engine_domain": diagnosis.domain if diagnosis else None,
        "engine_subdomain": diagnosis.subdomain if diagnosis else None,
        "engine_disagrees": attempt.engine_disagrees,
    }


def _cell(value) -> str:
    if isinstance(value, list):
        value = " ".join(value)
    text = "" if value is None else str(value)
    return "'" + text if text.startswith(FORMULA_START) else text


class _Line:
    """What ``csv.writer`` writes to: the line it was given, returned."""

    def write(self, line: str) -> str:
        return line


def _csv(rows):
    writer = csv.writer(_Line())
    yield writer.writerow(COLUMNS)
    for row in rows:
        yield writer.writerow([_cell(row[name]) for name in COLUMNS])


def _json(rows):
    yield "["
    for position, row in enumerate(rows):
        yield ("," if position else "") + "\n" + json.dumps(row)
    yield "\n]\n"


@login_required
@require_GET
def job_export(request, format: str):
    if format not in ("csv", "json"):
        raise Http404("exports are csv or json")
    filters = AttemptFilter(request.GET, queryset=selectors.attempt_export())
    if not filters.is_valid():
        problems = "; ".join(f"{name}: {' '.join(errors)}" for name, errors in filters.errors.items())
        return HttpResponse(problems, status=400, content_type="text/plain; charset=utf-8")
    attempts = filters.qs.order_by("-end", "-pk").iterator(chunk_size=CHUNK)
    rows = (export_row(attempt, request.build_absolute_uri) for attempt in attempts)
    if format == "csv":
        response = StreamingHttpResponse(_csv(rows), content_type="text/csv; charset=utf-8")
    else:
        response = StreamingHttpResponse(_json(rows), content_type="application/json")
    response["Content-Disposition"] = f'attachment; filename="attempts.{format}"'
    return response
