"""``manage.py test_rules [--rules PATH] [--cases DIR]``: run the regression cases against a rule set.

By default the stored regression cases (promoted reviewed attempts) run against the active revision;
``--rules`` takes a rule file or directory instead, ``--cases`` adds the cases of a directory (bundles
with an ``expected.json`` beside their ``attempt.json``, the evaluation sets' layout). Exit 0 when
every case passes, 1 when any fails, 2 when there is nothing to run or the rules do not load.
"""

import sys
from pathlib import Path

from django.core.management.base import BaseCommand

from engine import Engine, RuleSetError, load_rules
from rules.engine_cache import ENGINE_CACHE
from rules.selectors import revision_engine
from rules.services import active_revision
from workbench.regression import cases_run, directory_cases_run


class Command(BaseCommand):
    help = "Run the regression cases against the active rule set (or --rules PATH); exit 1 when any fails."

    def add_arguments(self, parser):
        parser.add_argument("--rules", metavar="PATH", help="a rule file or directory instead of the active revision")
        parser.add_argument("--cases", metavar="DIR", help="also run the cases in DIR (bundles with expected.json)")
        parser.add_argument("--no-stored", action="store_true", help="skip the cases stored in the database")

    def handle(self, *args, rules, cases, no_stored, **options):
        try:
            engine = Engine(load_rules(rules), ENGINE_CACHE) if rules else revision_engine(active_revision())
        except RuleSetError as exc:
            self.fail(f"the rules do not load:\n{exc}")
        if cases and not Path(cases).is_dir():
            self.fail(f"--cases {cases}: not a directory")
        results = [] if no_stored else cases_run(engine=engine)
        if cases:
            results += directory_cases_run(engine=engine, root=Path(cases))
        if not results:
            self.fail("no regression case to run (promote reviewed attempts, or give --cases DIR)")
        ruleset = engine.ruleset
        self.stdout.write(f"rule set {ruleset.name} {ruleset.version} ({ruleset.digest})")
        for result in results:
            self.stdout.write(f"{'PASS' if result.passed else 'FAIL'}  {result.name}")
            for problem in result.problems:
                self.stdout.write(f"      {problem}")
        failed = sum(not result.passed for result in results)
        self.stdout.write(f"{len(results) - failed} passed, {failed} failed")
        if failed:
            sys.exit(1)

    def fail(self, message: str):
        sys.stderr.write(f"test_rules: {message}\n")
        sys.exit(2)
