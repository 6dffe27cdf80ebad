"""``manage.py diagnose BUNDLE_DIR [--rules PATH] [--format json|text]`` (CONTRACTS.md section 4).

Runs the engine on one bundle and stores nothing. Without ``--rules`` it uses the active revision of
the default rule set when a database holds one (read only), else the default pack at
``FAULTLINE_RULES_PATH`` as revision 1 would be stored: either way the diagnosis the pipeline stores
for the same bundle. Exit 0 when a diagnosis was produced, 2 with a one-line message on stderr when
the bundle or the rules cannot be used.
"""

import sys

from django.core.management.base import BaseCommand

from engine import Engine, RuleSetError, load_rules, to_json, to_text
from engine.bundle import BundleError, load_bundle
from rules.engine_cache import ENGINE_CACHE
from rules.engine_limits import bundle_limits
from rules.selectors import engine_current


class Command(BaseCommand):
    help = "Diagnose one attempt bundle and print the diagnosis (no database needed)."
    requires_system_checks = []

    def add_arguments(self, parser):
        parser.add_argument("bundle", help="the attempt bundle directory")
        parser.add_argument("--rules", help="a rule file or directory instead of the active rule set")
        parser.add_argument("--format", choices=("json", "text"), default="json")

    def handle(self, *args, bundle, rules, format, **options):
        try:
            context = load_bundle(bundle, limits=bundle_limits())
        except BundleError as exc:
            self.fail(f"unusable bundle: {exc}")
        try:
            engine = Engine(load_rules(rules), ENGINE_CACHE) if rules else engine_current()
        except RuleSetError as exc:
            self.fail(
                f"invalid rules: {exc.errors[0]}"
                + (f" (and {len(exc.errors) - 1} more)" if len(exc.errors) > 1 else "")
            )
        result = engine.diagnose(context, limits=bundle_limits())
        self.stdout.write(to_json(result) if format == "json" else to_text(result), ending="")

    def fail(self, message: str):
        sys.stderr.write(f"diagnose: {message}\n")
        sys.exit(2)
