"""The verdict of record of an attempt: its active review's verdict when it has one (the newest review not
withdrawn), else its current diagnosis's. Kept on the attempt's row (``Attempt.verdict_*``) by
``attempt_verdict_update``, which the analysis calls to make a new diagnosis current and the review service
whenever a review is added or withdrawn; nothing else writes those columns. It moves the attempt in the daily
rollups (``verdict_days``) in the same transaction.

A diagnosis newer than the active review that differs both from the review's verdict and from the diagnosis the
review was given on makes the engine disagree with the review: the attempt stays reviewed (the review is still
the verdict) but goes back to the triage queue, flagged. A reanalysis that changes nothing, or that lands on the
reviewer's verdict, leaves a reviewed attempt out of the queue.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db import transaction

from diagnoses.models import Attempt, Diagnosis, Node, Review
from diagnoses.services import verdict_days

TRIAGE_OUTCOMES = (Diagnosis.Outcome.AMBIGUOUS, Diagnosis.Outcome.UNATTRIBUTED)


@dataclass(frozen=True)
class Verdict:
    outcome: str
    domain: str
    subdomain: str
    nodes: frozenset[str]


@dataclass(frozen=True)
class Record:
    """What the attempt's row stores: the verdict, where it comes from, and whether it waits in the queue."""

    source: str
    verdict: Verdict
    engine_disagrees: bool
    needs_review: bool


NO_VERDICT = Verdict("", "", "", frozenset())


def verdict_of_review(*, verdict: str, corrected: Verdict, reviewed: Verdict) -> Verdict:
    """A review's verdict: the reviewed diagnosis's when confirmed, the correction's when corrected, unattributed
    when the evidence does not tell."""
    if verdict == Review.Verdict.CONFIRMED:
        return reviewed
    if verdict == Review.Verdict.CORRECTED:
        return corrected
    return Verdict(Diagnosis.Outcome.UNATTRIBUTED, "", "", frozenset())


def record_of(*, engine: Verdict | None, review: Verdict | None, reviewed: Verdict | None) -> Record:
    """The verdict of record from the current diagnosis's verdict (``engine``), the active review's (``review``)
    and the verdict of the diagnosis that review was given on (``reviewed``); None where there is none."""
    if review is not None:
        disagrees = engine is not None and engine not in (review, reviewed)
        return Record(Attempt.VerdictSource.REVIEW, review, disagrees, disagrees)
    if engine is not None:
        return Record(Attempt.VerdictSource.ENGINE, engine, False, engine.outcome in TRIAGE_OUTCOMES)
    return Record("", NO_VERDICT, False, False)


def record_columns(record: Record, review) -> dict:
    """The attempt row's columns for ``record`` (its nodes are a relation, set apart)."""
    return {
        "verdict_source": record.source,
        "verdict_outcome": record.verdict.outcome,
        "verdict_domain": record.verdict.domain,
        "verdict_subdomain": record.verdict.subdomain,
        "verdict_review": review,
        "engine_disagrees": record.engine_disagrees,
        "needs_review": record.needs_review,
    }


def diagnosis_verdict(diagnosis: Diagnosis) -> Verdict:
    nodes = frozenset(diagnosis.root_cause_nodes.values_list("name", flat=True))
    return Verdict(diagnosis.outcome, diagnosis.domain, diagnosis.subdomain, nodes)


def review_verdict(review: Review) -> tuple[Verdict, Verdict]:
    """The review's verdict and the verdict of the diagnosis it was given on."""
    reviewed = diagnosis_verdict(review.diagnosis)
    corrected = Verdict(
        review.corrected_outcome, review.corrected_domain, review.corrected_subdomain, frozenset(review.corrected_nodes)
    )
    return verdict_of_review(verdict=review.verdict, corrected=corrected, reviewed=reviewed), reviewed


def review_active(attempt_id: int) -> Review | None:
    """The attempt's active review: its newest review not withdrawn (any of its diagnoses)."""
    reviews = Review.objects.filter(diagnosis__attempt_id=attempt_id, withdrawn=None)
    reviews = reviews.select_related("diagnosis").defer("diagnosis__document_json")
    return reviews.order_by("-created", "-pk").first()


def attempt_verdict_update(
    *, attempt_id: int, diagnosis: Diagnosis | None = None, root_nodes: dict[str, int] | None = None, **columns
) -> Record:
    """Recompute and store the attempt's verdict of record (its row locked meanwhile), making ``diagnosis`` its
    current diagnosis first when given, and move the attempt in the daily rollup (``verdict_days``) in the same
    transaction. ``columns``: more of the attempt's columns to set in the same update (the analysis's state).

    It reads only what it does not have: for a ``diagnosis`` just recorded, whose ``root_nodes`` (ids by name) the
    recording gives, nothing of it, and the reviews only when the attempt's verdict already comes from a review (a
    review is given only by the review service, which calls this in the review's transaction, under the same lock);
    the verdict's stored nodes only when it had a verdict."""
    with transaction.atomic(savepoint=False):  # a caller's transaction is enough: any failure fails it whole
        attempt = (
            Attempt.objects.select_for_update(of=("self",))
            .values("cluster_id", "current_diagnosis_id", "end", "verdict_source", "verdict_outcome", "verdict_domain",
                    "verdict_subdomain", "needs_review")
            .get(pk=attempt_id)
        )  # fmt: skip
        if diagnosis is None:
            diagnosis = Diagnosis.objects.defer("document_json").filter(pk=attempt["current_diagnosis_id"]).first()
        if root_nodes is not None:
            engine = Verdict(diagnosis.outcome, diagnosis.domain, diagnosis.subdomain, frozenset(root_nodes))
        else:
            engine = None if diagnosis is None else diagnosis_verdict(diagnosis)
        reviewed_before = attempt["verdict_source"] == Attempt.VerdictSource.REVIEW
        review = review_active(attempt_id) if root_nodes is None or reviewed_before else None
        review_side, reviewed = (None, None) if review is None else review_verdict(review)
        record = record_of(engine=engine, review=review_side, reviewed=reviewed)
        columns |= record_columns(record, review)
        if diagnosis is not None:
            columns["current_diagnosis"] = diagnosis
        Attempt.objects.filter(pk=attempt_id).update(**columns)
        nodes_before = verdict_days.attempt_node_ids(attempt_id) if attempt["verdict_source"] else []
        if root_nodes is not None and record.source == Attempt.VerdictSource.ENGINE:
            nodes_after = [root_nodes[name] for name in record.verdict.nodes]
        else:
            nodes = Node.objects.filter(cluster_id=attempt["cluster_id"], name__in=record.verdict.nodes)
            nodes_after = list(nodes.values_list("pk", flat=True))
        links = Attempt.verdict_nodes.through.objects
        if gone := set(nodes_before) - set(nodes_after):  # what ``set`` does, without reading the links again
            links.filter(attempt_id=attempt_id, node_id__in=gone).delete()
        if new := set(nodes_after) - set(nodes_before):
            links.bulk_create([links.model(attempt_id=attempt_id, node_id=node_id) for node_id in sorted(new)],
                              ignore_conflicts=True)  # fmt: skip
        stored = {"end": attempt["end"], "cluster_id": attempt["cluster_id"]}
        verdict_days.verdict_days_move(
            verdict_days.key_of(**stored, outcome=attempt["verdict_outcome"], domain=attempt["verdict_domain"],
                                subdomain=attempt["verdict_subdomain"], needs_review=attempt["needs_review"]),
            verdict_days.key_of(**stored, outcome=record.verdict.outcome, domain=record.verdict.domain,
                                subdomain=record.verdict.subdomain, needs_review=record.needs_review),
            nodes_before=nodes_before,
            nodes_after=nodes_after,
        )  # fmt: skip
    return record
