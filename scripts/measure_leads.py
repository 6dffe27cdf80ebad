"""Measure the leads on the real sets: is the line that shows the cause among the top 1 / top 3 leads?

    python scripts/measure_leads.py [--set DIR ...] [--records FILE ...] [--rules PATH] [-v]

A case counts when its deciding lines are recorded: ``deciding_lines`` (``[{"file": "logs/x.log", "line": N}]``,
1-based) in its ``expected.json`` (``scenarios/holdout``), or under its folder's name in a records file
(``scenarios/real-dev-deciding-lines.json`` for ``../shared/scenarios/real-dev``, which this repository cannot
change). A lead hits when its template is the template of a deciding line (a lead shows its template's first line).

Two figures per set (docs/leads.md, "How good they are"):
- as the rules stand: the cases the engine leaves unattributed although their label is a cause, with the default
  pack's events excluded from the leads, as the pipeline computes them;
- the rules withheld: every case, leads computed as if no rule knew any line (what a site whose pack lacks the
  failure's wording would see).

Without a database, like ``manage.py diagnose --leads``: no template store (no rarity signal).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(BASE_DIR))

from engine import Engine, load_rules  # noqa: E402
from engine.bundle import load_bundle  # noqa: E402
from leads import mine_attempt, rank  # noqa: E402

SETS = [
    (BASE_DIR / "../shared/scenarios/real-dev", BASE_DIR / "scenarios/real-dev-deciding-lines.json"),
    (BASE_DIR / "scenarios/holdout", None),
]
LIMIT = 5


def deciding_lines(case: Path, records: dict) -> list[tuple[str, int]]:
    expected = json.loads((case / "expected.json").read_text())
    listed = expected.get("deciding_lines") or records.get(case.name) or []
    return [(item["file"], int(item["line"])) for item in listed]


def position(context, events, decisive: list[tuple[str, int]]) -> int | None:
    """The 1-based position of the first lead whose template is a deciding line's, or None."""
    mined = mine_attempt(context, events)
    wanted = {mined.places.get(place) for place in decisive} - {None}
    for index, lead in enumerate(rank(mined, None, LIMIT), 1):
        if lead.template.key in wanted:
            return index
    return None


def measure(set_dir: Path, records: dict, engine: Engine, verbose: bool) -> dict:
    standing, withheld = [], []
    for case in sorted(p for p in set_dir.iterdir() if (p / "expected.json").exists()):
        decisive = deciding_lines(case, records)
        if not decisive:
            continue
        expected = json.loads((case / "expected.json").read_text())
        context = load_bundle(case)
        analysis = engine.analyse(context)
        blind = position(context, (), decisive)
        withheld.append(blind)
        row = f"{case.name:55} engine {analysis.diagnosis['outcome']:12} rules withheld: {_shown(blind)}"
        if analysis.diagnosis["outcome"] == "unattributed" and expected["outcome"] != "unattributed":
            found = position(context, analysis.events, decisive)
            standing.append(found)
            row += f"  as the rules stand: {_shown(found)}"
        if verbose:
            print(row)
    return {"standing": standing, "withheld": withheld}


def _shown(found: int | None) -> str:
    return f"lead {found}" if found else "not in the top 5"


def summary(name: str, positions: list[int | None]) -> str:
    if not positions:
        return f"{name}: no case"
    top1 = sum(1 for p in positions if p == 1)
    top3 = sum(1 for p in positions if p is not None and p <= 3)
    n = len(positions)
    return f"{name}: {n} cases, top-1 {top1}/{n} = {top1 / n:.2f}, top-3 {top3}/{n} = {top3 / n:.2f}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", action="append", type=Path, help="a set of cases (default: real-dev and holdout)")
    parser.add_argument("--records", action="append", type=Path, help="a records file for the --set of that order")
    parser.add_argument("--rules", default=str(BASE_DIR / "rules/packs/default"))
    parser.add_argument("-v", "--verbose", action="store_true", help="one line per case")
    args = parser.parse_args()
    sets = list(zip(args.set, args.records or [None] * len(args.set), strict=False)) if args.set else SETS
    engine = Engine(load_rules(args.rules))
    totals = {"standing": [], "withheld": []}
    for set_dir, records_file in sets:
        if not set_dir.is_dir():
            print(f"{set_dir}: not found, skipped")
            continue
        records = json.loads(records_file.read_text()) if records_file and records_file.exists() else {}
        print(f"== {set_dir.resolve().name}")
        result = measure(set_dir, records, engine, args.verbose)
        for key, label in (("standing", "as the rules stand"), ("withheld", "the rules withheld")):
            print("  " + summary(label, result[key]))
            totals[key] += result[key]
    print("== all sets")
    print("  " + summary("as the rules stand", totals["standing"]))
    print("  " + summary("the rules withheld", totals["withheld"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
