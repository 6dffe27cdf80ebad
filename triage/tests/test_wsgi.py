"""The web process's entry point (gunicorn loads ``triage.wsgi``)."""

import os
import subprocess
import sys
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parents[2]


def test_the_objects_of_start_up_are_frozen_out_of_the_collectors_passes():
    """A full pass of the garbage collector then walks what requests made, not Django's own 100,000-odd objects."""
    script = "import gc; before = gc.get_freeze_count(); import triage.wsgi; print(before, gc.get_freeze_count())"
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "triage.settings"}
    run = subprocess.run([sys.executable, "-c", script], cwd=BASE_DIR, env=env, capture_output=True, text=True)

    before, after = map(int, run.stdout.split())
    assert (before, run.returncode) == (0, 0)
    assert after > 50_000
