"""Regression cases: reviewed attempts kept, with a copy of their bundle, as tests of the rules.

``case_promote`` writes one; ``case_check`` runs a rule set's engine on a case's bundle and compares
the diagnosis with the reviewed outcome, domain, subdomain and root-cause nodes.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from django.db import transaction

from diagnoses import bundle_store
from diagnoses.models import Attempt, Review
from engine import Engine
from engine.bundle import load_bundle
from rules.agreement import differences
from rules.models import RegressionCase

CASES_DIR = "cases"  # under the bundle root
EXPECTED_FILE = "expected.json"  # a case directory's expectation (the evaluation sets' layout)


class CaseRejected(Exception):
    """The attempt cannot become a regression case; the message says why."""


def expected_from_review(review: Review) -> dict:
    """What a review says the diagnosis should be: the reviewed diagnosis when confirmed, else the correction."""
    if review.verdict == Review.Verdict.CONFIRMED:
        diagnosis = review.diagnosis
        return {
            "outcome": diagnosis.outcome,
            "domain": diagnosis.domain or None,
            "subdomain": diagnosis.subdomain or None,
            "nodes": sorted(node.name for node in diagnosis.root_cause_nodes.all()),
        }
    if review.verdict == Review.Verdict.CORRECTED:
        return {
            "outcome": review.corrected_outcome,
            "domain": review.corrected_domain or None,
            "subdomain": review.corrected_subdomain or None,
            "nodes": sorted(review.corrected_nodes),
        }
    raise CaseRejected("the review says the evidence is insufficient: it names no outcome to expect")


def latest_review(attempt: Attempt) -> Review | None:
    return (
        Review.objects.select_related("diagnosis")
        .filter(diagnosis__attempt=attempt)
        .order_by("-created", "-pk")
        .first()
    )


def case_promote(*, attempt: Attempt, user=None, name: str = "") -> RegressionCase:
    """Keep ``attempt`` as a regression case: a copy of its bundle and what its latest review expects."""
    review = latest_review(attempt)
    if review is None:
        raise CaseRejected(f"attempt {attempt} has no review: only a reviewed attempt can become a regression case")
    expected = expected_from_review(review)
    name = name.strip() or f"{attempt.cluster.name}/{attempt.job.job_id}#{attempt.number}"
    if RegressionCase.objects.filter(name=name).exists():
        raise CaseRejected(f"a regression case named {name!r} already exists")
    location = f"{CASES_DIR}/{bundle_store.new_location()}"
    staging = bundle_store.stage()
    try:
        bundle_store.copy_tree(bundle_store.path_of(attempt.bundle), staging / "bundle")
        bundle_store.place(staging / "bundle", location)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    try:
        with transaction.atomic():
            return RegressionCase.objects.create(
                name=name,
                attempt=attempt,
                review=review,
                bundle=location,
                expected_outcome=expected["outcome"],
                expected_domain=expected["domain"] or "",
                expected_subdomain=expected["subdomain"] or "",
                expected_nodes=expected["nodes"],
                created_by=user,
            )
    except BaseException:
        bundle_store.remove(location)
        raise


@dataclass
class CaseResult:
    name: str
    expected: dict
    diagnosis: dict | None = None
    problems: list[str] = field(default_factory=list)  # differences, or why the case could not run

    @property
    def passed(self) -> bool:
        return self.diagnosis is not None and not self.problems


def check(name: str, bundle: Path, expected: dict, engine: Engine) -> CaseResult:
    """Diagnose the bundle at ``bundle`` with ``engine`` and compare with ``expected``."""
    result = CaseResult(name, expected)
    try:
        result.diagnosis = engine.diagnose(load_bundle(bundle))
    except Exception as exc:  # a case that cannot run fails, with the reason
        result.problems.append(f"the bundle could not be diagnosed: {type(exc).__name__}: {exc}")
        return result
    result.problems = differences(expected, result.diagnosis)
    return result


def cases_run(*, engine: Engine, cases=None) -> list[CaseResult]:
    """Every stored regression case (or ``cases``) checked against ``engine``, by name."""
    cases = RegressionCase.objects.all() if cases is None else cases
    return [check(case.name, bundle_store.path_of(case.bundle), case.expected, engine) for case in cases]


def directory_cases_run(*, engine: Engine, root: Path) -> list[CaseResult]:
    """The cases in a directory: every bundle below ``root`` holding an ``expected.json`` beside its attempt.json."""
    results = []
    for expected_file in sorted(Path(root).rglob(EXPECTED_FILE)):
        bundle = expected_file.parent
        name = str(bundle.relative_to(root)) if bundle != Path(root) else bundle.name
        try:
            expected = json.loads(expected_file.read_text())
            expected = {k: expected.get(k) for k in ("outcome", "domain", "subdomain", "nodes")}
            if expected["outcome"] is None:
                raise ValueError("no 'outcome'")
        except (ValueError, UnicodeDecodeError) as exc:
            results.append(CaseResult(name, {}, problems=[f"{expected_file}: not a usable expectation ({exc})"]))
            continue
        results.append(check(name, bundle, expected, engine))
    return results
