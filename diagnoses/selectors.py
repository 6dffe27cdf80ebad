"""Reads: the querysets the API and pages list, and the bundle lines around a piece of evidence."""

from itertools import islice

from django.db.models import Prefetch, QuerySet

from diagnoses import bundles
from diagnoses.models import Attempt, Cluster, Diagnosis, Evidence, Job, Node, NodeEvent, Review

EXCERPT_LINE_CAP = 2000  # characters shown of one line


def cluster_list() -> QuerySet[Cluster]:
    return Cluster.objects.all()


def job_list() -> QuerySet[Job]:
    return Job.objects.select_related("cluster")


def attempt_list() -> QuerySet[Attempt]:
    return Attempt.objects.select_related("cluster", "job", "current_diagnosis").prefetch_related(
        Prefetch("nodes", queryset=Node.objects.only("name")),
        Prefetch("current_diagnosis__root_cause_nodes", queryset=Node.objects.only("name")),
    )


def diagnosis_list() -> QuerySet[Diagnosis]:
    return Diagnosis.objects.select_related("revision__ruleset").prefetch_related(
        Prefetch("root_cause_nodes", queryset=Node.objects.only("name"))
    )


def evidence_list() -> QuerySet[Evidence]:
    return Evidence.objects.select_related("node")


def node_event_list() -> QuerySet[NodeEvent]:
    return NodeEvent.objects.select_related("node")


def review_list() -> QuerySet[Review]:
    return Review.objects.select_related("reviewer")


def attempt_find(key: str) -> Attempt | None:
    """An attempt by id or by ``CLUSTER/JOB_ID[#ATTEMPT]`` (attempt 0 when the number is left out)."""
    if key.isdigit():
        return Attempt.objects.filter(pk=int(key)).first()
    cluster, _, job = key.partition("/")
    job_id, _, number = job.partition("#")
    if number and not number.isdigit():
        return None
    return Attempt.objects.filter(cluster__name=cluster, job__job_id=job_id, number=int(number or 0)).first()


def bundle_excerpt(*, attempt: Attempt, ref: str, context: int = 5) -> list[dict]:
    """The lines ``context`` before and after ``ref`` (``logs/node02/syslog.log:4182``) in the attempt's bundle.

    Lines are decoded leniently (invalid UTF-8 replaced); an unknown or unsafe path gives no lines.
    """
    path, _, number = ref.rpartition(":")
    if not number.isdigit() or not path:
        return []
    line = int(number)
    bundle = bundles.path_of(attempt.bundle).resolve()
    file = (bundle / path).resolve()
    if not file.is_relative_to(bundle) or not file.is_file():
        return []
    first = max(1, line - context)
    with open(file, "rb") as stream:
        lines = islice(stream, first - 1, line + context)
        return [
            {"line": first + offset, "text": raw.rstrip(b"\r\n").decode("utf-8", "replace")[:EXCERPT_LINE_CAP]}
            for offset, raw in enumerate(lines)
        ]
