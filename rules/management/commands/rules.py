"""``manage.py rules export|import``: move rule sets between installations as files.

``rules export FILE [--ruleset NAME] [--revision N]`` writes a revision's text (the active one by
default) as a YAML rule file, exactly as stored; ``manage.py diagnose --rules FILE`` runs it as is.
``rules import PATH [--ruleset NAME] [--message TEXT] [--activate]`` stores a rule file (kept
as written, line ends aside, so the same rule set has the same digest on both installations) or a directory of them
as a new revision, a draft unless ``--activate``; a new rule set is created when NAME is new.
"""

import sys
from pathlib import Path

from django.core.management.base import BaseCommand

from engine import RuleSetError
from rules.models import RuleSet, RuleSetRevision
from rules.revisions import pack_text
from rules.selectors import DEFAULT_RULESET, revision_active
from rules.services import active_revision, revision_activate, revision_create


class Command(BaseCommand):
    help = "Export a rule-set revision to a file, or import a rule file or directory as a new revision."

    def add_arguments(self, parser):
        commands = parser.add_subparsers(dest="command", required=True)
        export = commands.add_parser("export", help="write a revision's text to FILE ('-' for stdout)")
        export.add_argument("file")
        export.add_argument("--ruleset", default=DEFAULT_RULESET)
        export.add_argument("--revision", type=int, help="the revision number (default: the active one)")
        load = commands.add_parser("import", help="store a rule file or directory as a new revision")
        load.add_argument("path")
        load.add_argument("--ruleset", default=DEFAULT_RULESET)
        load.add_argument("--message", default="")
        load.add_argument("--activate", action="store_true", help="make the new revision the active one")

    def handle(self, *args, command, **options):
        if command == "export":
            self.export(options["file"], options["ruleset"], options["revision"])
        else:
            self.load(Path(options["path"]), options["ruleset"], options["message"], options["activate"])

    def export(self, file: str, name: str, number: int | None):
        if name == DEFAULT_RULESET:
            active_revision()  # the pack becomes revision 1 on first use
        if number is None:
            revision = revision_active(name)
            if revision is None:
                self.fail(f"rule set {name!r} does not exist or has no active revision")
            revision = RuleSetRevision.objects.get(pk=revision.pk)
        else:
            revision = RuleSetRevision.objects.filter(ruleset__name=name, number=number).first()
            if revision is None:
                self.fail(f"rule set {name!r} has no revision {number}")
        if file == "-":
            self.stdout.write(revision.text, ending="")
            return
        Path(file).write_text(revision.text, encoding="utf-8")
        self.stdout.write(f"{revision} ({revision.digest}) written to {file}")

    def load(self, path: Path, name: str, message: str, activate: bool):
        try:
            text = path.read_text(encoding="utf-8") if path.is_file() else pack_text(path)
        except (RuleSetError, UnicodeDecodeError, OSError) as exc:
            self.fail(f"{path}: {exc}")
        if name == DEFAULT_RULESET:
            active_revision()  # the pack is revision 1: an import comes after it
        ruleset, _ = RuleSet.objects.get_or_create(name=name)
        message = message or f"Imported from {path.name}"
        try:
            revision = revision_create(ruleset=ruleset, text=text, message=message, parent=revision_active(name))
        except RuleSetError as exc:
            self.fail(f"{path}: the rules do not load:\n{exc}")
        if activate:
            revision_activate(revision=revision, message=message)
        state = "active" if activate else "a draft"
        self.stdout.write(f"{revision} ({revision.digest}) stored, {state}")

    def fail(self, message: str):
        sys.stderr.write(f"rules: {message}\n")
        sys.exit(2)
