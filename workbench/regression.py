"""Running regression cases: a rule set's engine on each case's bundle, its diagnosis compared with what the
case expects (outcome, domain, subdomain, root-cause nodes). Reads only: the stored cases
(``RegressionCase``) and directories of cases laid out as the evaluation sets are (``expected.json``
beside ``attempt.json``)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from diagnoses import bundle_store
from engine import Engine
from engine.bundle import load_bundle
from workbench.agreement import differences
from workbench.models import RegressionCase

EXPECTED_FILE = "expected.json"  # a case directory's expectation (the evaluation sets' layout)


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
    results = []
    for case in cases:
        with bundle_store.local(case.bundle) as bundle:
            results.append(check(case.name, bundle, case.expected, engine))
    return results


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
