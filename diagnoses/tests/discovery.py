"""Helpers of the discovery tests: a cluster watching a folder of bundles, and a stored bundle read back."""

import subprocess
import sys
from io import StringIO
from pathlib import Path

from django.core.management import call_command

from diagnoses.models import Attempt, Cluster
from diagnoses.services import clusters

BASE_DIR = Path(__file__).resolve().parents[2]


def folder_cluster(folder: Path, *, name: str = "dgx-a", sources: list[dict] | None = None, **fields) -> Cluster:
    """A cluster whose scheduler is the watched folder ``folder`` (bundles count as soon as they exist)."""
    folder.mkdir(parents=True, exist_ok=True)
    values = {"poll_interval": 60, "gather_delay": 0, "enabled": True, **fields}
    return clusters.cluster_configure(
        cluster=Cluster.objects.filter(name=name).first(),
        name=name,
        connector="folder",
        scheduler_settings={"path": str(folder), "settle_seconds": 0},
        sources=sources or [],
        **values,
    )


def exported_diagnosis(attempt: Attempt, out: Path) -> str:
    """What ``manage.py diagnose`` prints for the attempt's bundle as ``export-bundle`` writes it out."""
    call_command("export-bundle", str(attempt.pk), str(out), stdout=StringIO())
    return subprocess.run(
        [sys.executable, "manage.py", "diagnose", str(out)], cwd=BASE_DIR, capture_output=True, check=True, text=True
    ).stdout
