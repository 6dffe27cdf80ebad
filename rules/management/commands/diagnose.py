"""``manage.py diagnose BUNDLE_DIR [--rules PATH] [--format json|text] [--leads]`` (docs/diagnosis.md, "The command").

Runs the engine on one bundle and stores nothing. Without ``--rules`` it uses the active revision of
the default rule set when a database holds one (read only), else the default pack at
``FAULTLINE_RULES_PATH`` as revision 1 would be stored: either way the diagnosis the pipeline stores
for the same bundle. Exit 0 when a diagnosis was produced, 2 with a one-line message on stderr when
the bundle or the rules cannot be used.

``--leads`` adds the lines no rule explains that most likely show the failure (docs/leads.md), computed from the
bundle alone (wording, nodes, time; no template store): a ``leads`` list, best first, in the JSON, a "Leads"
section in the text. Without it the output is the diagnosis alone, as before.

It needs neither the app registry nor Celery: ``manage.py`` runs it without ``django.setup()``, which
it calls only when there is a database to read a rule set from (docs/performance.md, the start-up).
"""

import os
import sys

import django
from django.apps import apps
from django.core.management.base import BaseCommand

from engine import Engine, RuleSetError, load_rules, to_json, to_text
from engine.bundle import BundleError, load_bundle
from leads import find_leads
from rules.engine_cache import ENGINE_CACHE, database_created, engine_pack
from rules.engine_limits import bundle_limits


class Command(BaseCommand):
    help = "Diagnose one attempt bundle and print the diagnosis (no database needed)."
    requires_system_checks = []

    def add_arguments(self, parser):
        parser.add_argument("bundle", help="the attempt bundle directory")
        parser.add_argument("--rules", help="a rule file or directory instead of the active rule set")
        parser.add_argument("--format", choices=("json", "text"), default="json")
        parser.add_argument(
            "--leads", action="store_true", help="add the lines no rule explains that most likely show the failure"
        )

    def handle(self, *args, bundle, rules, format, leads=False, **options):
        try:
            context = load_bundle(bundle, limits=bundle_limits())
        except BundleError as exc:
            self.fail(f"unusable bundle: {exc}")
        try:
            engine = Engine(load_rules(rules), ENGINE_CACHE) if rules else self.engine_stored()
        except RuleSetError as exc:
            self.fail(
                f"invalid rules: {exc.errors[0]}"
                + (f" (and {len(exc.errors) - 1} more)" if len(exc.errors) > 1 else "")
            )
        analysis = engine.analyse(context, limits=bundle_limits(), threads=os.cpu_count() or 1)
        result = analysis.diagnosis
        if not leads:
            self.stdout.write(to_json(result) if format == "json" else to_text(result), ending="")
            return
        found = [lead.document() for lead in find_leads(context, analysis.events)]
        if format == "json":
            self.stdout.write(to_json({**result, "leads": found}), ending="")
        else:
            self.stdout.write(to_text(result) + leads_text(found), ending="")

    def engine_stored(self) -> Engine:
        """``rules.selectors.engine_current``, loading the apps only when there is a database to read."""
        if not database_created():
            return engine_pack()
        if not apps.ready:
            django.setup()
        from rules.selectors import engine_current  # its models need the app registry set up above

        return engine_current()

    def fail(self, message: str):
        sys.stderr.write(f"diagnose: {message}\n")
        sys.exit(2)


def leads_text(found: list[dict]) -> str:
    """The text report's "Leads" section."""
    lines = ["Leads (lines no rule knows yet)"]
    for lead in found:
        lines.append(f"  {lead['score']:.4f}  {lead['file']}:{lead['line']}  {lead['node'] or '-'}  {lead['text']}")
        lines.append(f"          {lead['why']}")
    if not found:
        lines.append("  none")
    return "\n".join(lines) + "\n"
