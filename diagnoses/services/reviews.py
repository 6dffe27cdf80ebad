"""Reviews: a person's verdict on a diagnosis (the attempt page and the API call this)."""

from diagnoses.models import Diagnosis, Review


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
    """Record a person's verdict; a correction carries the corrected outcome (and domain, subdomain, nodes)."""
    review = Review(
        diagnosis=diagnosis,
        reviewer=reviewer,
        verdict=verdict,
        note=note,
        corrected_outcome=corrected_outcome,
        corrected_domain=corrected_domain,
        corrected_subdomain=corrected_subdomain,
        corrected_nodes=sorted(set(corrected_nodes or ())),
    )
    review.full_clean()
    review.save()
    return review
