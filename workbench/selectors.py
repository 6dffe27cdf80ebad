"""Reads for the rule workbench's pages: attempts to try a revision on, their evidence, regression cases,
the reviewed attempts that could become cases, and background runs."""

from django.db.models import QuerySet

from diagnoses import selectors as diagnoses_selectors
from diagnoses.models import Attempt, Evidence, Review
from rules.models import Activation, RuleSetRevision
from workbench.models import BatchRun, RegressionCase

ATTEMPT_CHOICES = 300  # attempts offered in a picker, newest first
EVIDENCE_SHOWN = 100  # evidence lines offered to explore
REVIEWED_SHOWN = 200  # reviewed attempts offered for promotion
RUNS_SHOWN = 10


def attempt_choices() -> QuerySet[Attempt]:
    return diagnoses_selectors.attempt_list()[:ATTEMPT_CHOICES]


def attempt_get(pk: int) -> Attempt | None:
    return diagnoses_selectors.attempt_list().filter(pk=pk).first()


def attempt_evidence(attempt: Attempt) -> list[Evidence]:
    """The evidence of the attempt's current diagnosis, to pick a line to explore."""
    if attempt.current_diagnosis_id is None:
        return []
    return list(
        Evidence.objects.filter(diagnosis_id=attempt.current_diagnosis_id).select_related("node")[:EVIDENCE_SHOWN]
    )


def case_list() -> QuerySet[RegressionCase]:
    return RegressionCase.objects.select_related("attempt__cluster", "attempt__job", "created_by")


def attempts_reviewed_not_promoted() -> QuerySet[Attempt]:
    """Attempts someone reviewed that are not a regression case yet."""
    promoted = RegressionCase.objects.exclude(attempt=None).values("attempt_id")
    reviewed = Review.objects.values("diagnosis__attempt_id")
    return diagnoses_selectors.attempt_list().filter(pk__in=reviewed).exclude(pk__in=promoted)[:REVIEWED_SHOWN]


def revision_activations(revision: RuleSetRevision) -> QuerySet[Activation]:
    return revision.activations.select_related("user", "previous")[:20]


def run_list(kind: str, revision: RuleSetRevision | None = None) -> QuerySet[BatchRun]:
    """The latest runs of ``kind`` (of ``revision`` when given)."""
    runs = BatchRun.objects.filter(kind=kind).select_related("revision__ruleset")
    return (runs if revision is None else runs.filter(revision=revision))[:RUNS_SHOWN]


def run_get(pk: int) -> BatchRun | None:
    return BatchRun.objects.select_related("revision__ruleset", "created_by").filter(pk=pk).first()
