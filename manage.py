#!/usr/bin/env python
"""Django's command-line utility for Faultline."""

import os
import sys


def main():
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "triage.settings")
    if sys.argv[1:2] == ["diagnose"]:
        # One bundle, nothing stored: run without loading every app (docs/performance.md, the start-up).
        from rules.management.commands.diagnose import Command

        Command().run_from_argv(sys.argv)
        return
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
