"""``manage.py patterns BUNDLE_DIR... [--rules PATH] [--all] [--top N] [--format text|json]`` (docs/leads.md).

The failure patterns of bundles on disk, before deploying: each bundle is diagnosed (the active rule set, as
``manage.py diagnose`` chooses it, or ``--rules``), its templates mined, and the normal lines of every template
counted over all the bundles (the template store of a deployment, in memory); then each attempt the rules did not
settle (``--all``: every attempt) gets its leads, and the templates among their first three are printed by how many
attempts they would explain, with an example line. Nothing is stored. A directory holding no ``attempt.json`` is
searched for bundles below it. Exit 0, or 2 with a one-line message when a bundle or the rules cannot be used.
"""

import json
import sys
from pathlib import Path

from django.core.management.base import BaseCommand

from engine import Engine, RuleSetError, load_rules
from engine.bundle import BundleError, load_bundle
from leads import mine_attempt, rank
from rules.engine_cache import ENGINE_CACHE
from rules.engine_limits import bundle_limits
from rules.management.commands.diagnose import Command as Diagnose

PATTERN_LEADS = 3
UNSETTLED = ("unattributed", "ambiguous")


class Command(BaseCommand):
    help = "Mine the failure patterns of attempt bundles on disk and print them by attempts explained."
    requires_system_checks = []

    def add_arguments(self, parser):
        parser.add_argument("bundles", nargs="+", help="bundle directories, or directories holding bundles")
        parser.add_argument("--rules", help="a rule file or directory instead of the active rule set")
        parser.add_argument("--all", action="store_true", help="leads for every attempt, settled or not")
        parser.add_argument("--top", type=int, default=20, help="how many patterns to print (default 20)")
        parser.add_argument("--format", choices=("json", "text"), default="text")

    def handle(self, *args, bundles, rules, all, top, format, **options):
        try:
            engine = Engine(load_rules(rules), ENGINE_CACHE) if rules else Diagnose().engine_stored()
        except RuleSetError as exc:
            self.fail(f"invalid rules: {exc.errors[0]}")
        mined = []
        for path in bundle_dirs(bundles):
            try:
                context = load_bundle(path, limits=bundle_limits())
            except BundleError as exc:
                self.fail(f"unusable bundle {path}: {exc}")
            analysis = engine.analyse(context, limits=bundle_limits())
            mined.append((path, analysis.diagnosis["outcome"], mine_attempt(context, analysis.events)))
        normal: dict[str, int] = {}
        for _path, _outcome, found in mined:
            for key, template in found.templates.items():
                normal[key] = normal.get(key, 0) + template.normal
        patterns: dict[str, dict] = {}
        for path, outcome, found in mined:
            if not all and outcome not in UNSETTLED:
                continue
            for lead in rank(found, normal, PATTERN_LEADS):
                line = lead.template.first
                entry = patterns.setdefault(
                    lead.template.key,
                    {"id": lead.template.key, "template": lead.template.text, "kind": line.kind, "attempts": 0,
                     "example": f"{path}/{line.file}:{line.line}", "text": line.text},
                )  # fmt: skip
                entry["attempts"] += 1
        ordered = sorted(patterns.values(), key=lambda p: (-p["attempts"], p["id"]))[:top]
        if format == "json":
            self.stdout.write(json.dumps({"bundles": len(mined), "patterns": ordered}, indent=2) + "\n", ending="")
            return
        shown = f" (the first {top})" if len(patterns) > top else ""
        self.stdout.write(f"{len(mined)} bundles, {len(patterns)} patterns{shown}\n")
        for entry in ordered:
            self.stdout.write(f"{entry['attempts']:6}  {entry['id']}  [{entry['kind']}] {entry['template']}\n")
            self.stdout.write(f"{'':8}e.g. {entry['example']}: {entry['text'][:200]}\n")

    def fail(self, message: str):
        sys.stderr.write(f"patterns: {message}\n")
        sys.exit(2)


def bundle_dirs(paths: list[str]) -> list[Path]:
    """The bundle directories named, or found below a named directory that is not one, in order."""
    found = []
    for name in paths:
        path = Path(name)
        if (path / "attempt.json").is_file() or not path.is_dir():
            found.append(path)
        else:
            found += sorted(p.parent for p in path.rglob("attempt.json"))
    return found
