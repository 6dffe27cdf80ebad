"""Reviews: a person's verdict on a diagnosis, the one path the attempt page and the API take. The rules are here
and only here (``review_problems``): a correction stays within the taxonomy (the subdomain belongs to the domain),
names only the attempt's nodes, and names the node of a node-level cause. A new review supersedes the attempt's
active one; a review may be withdrawn. Both keep the history and update the attempt's verdict of record."""

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from diagnoses.models import Diagnosis, Review
from diagnoses.services import event_counts
from diagnoses.services.verdicts import attempt_verdict_update
from engine.taxonomy import DOMAINS, OUTCOMES, node_level, subdomain_known

CORRECTIONS = ("corrected_outcome", "corrected_domain", "corrected_subdomain", "corrected_nodes")


def review_problems(*, verdict: str, corrections: dict, nodes: list[str]) -> dict[str, str]:
    """What is wrong with a review, by field (empty when nothing is); ``nodes``: the attempt's nodes."""
    if verdict not in Review.Verdict.values:
        return {"verdict": f"{verdict!r} is not a verdict ({', '.join(Review.Verdict.values)})."}
    if verdict != Review.Verdict.CORRECTED:
        given = [name for name in CORRECTIONS if corrections.get(name)]
        return dict.fromkeys(given, "Only a correction (verdict 'corrected') sets this.")
    outcome = corrections.get("corrected_outcome", "")
    domain = corrections.get("corrected_domain", "")
    subdomain = corrections.get("corrected_subdomain", "")
    named = corrections.get("corrected_nodes") or []
    if not outcome:
        return {"corrected_outcome": "A correction names the corrected outcome."}
    if outcome not in OUTCOMES:
        return {"corrected_outcome": f"{outcome!r} is not an outcome ({', '.join(OUTCOMES)})."}
    if domain and domain not in DOMAINS:
        return {"corrected_domain": f"{domain!r} is not a domain of the taxonomy."}
    outside = sorted(set(named) - set(nodes))
    if outside:
        return {"corrected_nodes": f"{', '.join(outside)}: not a node of this attempt."}
    if outcome == Diagnosis.Outcome.UNATTRIBUTED and (domain or subdomain or named):
        return {"corrected_outcome": "An unattributed outcome has no domain, subdomain or root-cause nodes."}
    if outcome == Diagnosis.Outcome.AMBIGUOUS and subdomain:
        return {"corrected_subdomain": "An ambiguous outcome has no single subdomain."}
    if outcome != Diagnosis.Outcome.ATTRIBUTED:
        return {}
    if not domain:
        return {"corrected_domain": "An attributed outcome names its domain."}
    if not subdomain:
        return {"corrected_subdomain": "An attributed outcome names its subdomain."}
    if not subdomain_known(domain, subdomain):
        return {"corrected_subdomain": f"{subdomain} is not a subdomain of {domain}."}
    if node_level(domain, subdomain) and not named and nodes:
        return {"corrected_nodes": f"{domain} / {subdomain} lies on a node: name the root-cause node."}
    return {}


def review_create(
    *,
    diagnosis: Diagnosis,
    reviewer,
    verdict: str,
    note: str = "",
    corrected_outcome: str = "",
    corrected_domain: str = "",
    corrected_subdomain: str = "",
    corrected_nodes: list[str] | None = None,
) -> Review:
    """Record a person's verdict; it supersedes the attempt's active review. Raises ``ValidationError`` (by field)
    when the review breaks a rule of ``review_problems``."""
    corrections = {
        "corrected_outcome": corrected_outcome,
        "corrected_domain": corrected_domain,
        "corrected_subdomain": corrected_subdomain,
        "corrected_nodes": sorted(set(corrected_nodes or ())),
    }
    nodes = list(diagnosis.attempt.nodes.values_list("name", flat=True))
    problems = review_problems(verdict=verdict, corrections=corrections, nodes=nodes)
    if problems:
        raise ValidationError({name: [message] for name, message in problems.items()})
    picked = verdict == Review.Verdict.CORRECTED and candidate_picked(diagnosis.document, corrections)
    review = Review(
        diagnosis=diagnosis, reviewer=reviewer, verdict=verdict, note=note, picked_candidate=picked, **corrections
    )
    review.full_clean()
    with transaction.atomic():
        review.save()
        attempt_verdict_update(attempt_id=diagnosis.attempt_id)
        event_counts.events_count(event_counts.review_recorded(diagnosis.attempt.cluster.name, verdict))
    return review


def candidate_picked(document: dict, corrections: dict) -> bool:
    """Whether a correction names one of the diagnosis's own candidates (its outcome attributed, with a candidate's
    domain, subdomain and nodes): the engine found the cause and could not choose, a person chose. Such a pick
    counts as agreeing with the engine, not as correcting it (the overview's share of reviews that agree)."""
    if corrections["corrected_outcome"] != "attributed":
        return False
    chosen = (
        corrections["corrected_domain"],
        corrections["corrected_subdomain"],
        sorted(corrections["corrected_nodes"]),
    )
    return any(
        (candidate.get("domain", ""), candidate.get("subdomain", ""), sorted(candidate.get("nodes", ()))) == chosen
        for candidate in document.get("candidates", ())
    )


def review_withdraw(*, review: Review, by) -> Review:
    """Withdraw a review: it stays in the history, no longer counts, and the attempt's verdict falls back to the
    review before it (or to the diagnosis). Raises ``ValidationError`` when it is already withdrawn."""
    with transaction.atomic():
        updated = Review.objects.filter(pk=review.pk, withdrawn=None).update(withdrawn=timezone.now(), withdrawn_by=by)
        if not updated:
            raise ValidationError("This review is already withdrawn.")
        attempt_verdict_update(attempt_id=review.diagnosis.attempt_id)
        event_counts.events_count(event_counts.review_withdrawn(review.diagnosis.attempt.cluster.name))
    review.refresh_from_db()
    return review
