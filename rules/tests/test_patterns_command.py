"""``manage.py patterns``: the failure patterns of bundles on disk, by attempts explained, with nothing stored."""

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
UNKNOWN = "Nov  2 10:14:0{n} node03 fabricd[31{n}]: port {n} of switch sw-7 wedged: credit loop failure on lane {n}"
XID = "Nov  2 10:14:07 node02 kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=1, name=python, GPU has fallen off the bus."


def patterns(*args: str) -> subprocess.CompletedProcess:
    environment = {**os.environ, "DATABASE_URL": "sqlite:////nonexistent/faultline.sqlite3"}
    command = [sys.executable, "manage.py", "patterns", "--rules", "rules/packs/default", *args]
    return subprocess.run(command, cwd=ROOT, env=environment, capture_output=True, text=True, timeout=180)


def test_prints_the_templates_by_attempts_explained(tmp_path, write_bundle):
    for n in range(3):
        write_bundle(tmp_path / "set" / f"u{n}", job_id=f"{n}", logs={"node03/syslog.log": [UNKNOWN.format(n=n)]})
    write_bundle(tmp_path / "set" / "x", job_id="9", logs={"node02/syslog.log": [XID, UNKNOWN.format(n=5)]})
    done = patterns(str(tmp_path / "set"), "--format", "json")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["bundles"] == 4
    first = result["patterns"][0]
    assert first["attempts"] == 3  # the attributed attempt's line counts only with --all
    assert first["template"].endswith("credit loop failure on lane <NUM>")
    assert first["kind"] == "system"
    everything = json.loads(patterns(str(tmp_path / "set"), "--format", "json", "--all").stdout)
    assert everything["patterns"][0]["attempts"] == 4
    text = patterns(str(tmp_path / "set" / "u0"), str(tmp_path / "set" / "u1")).stdout
    assert text.startswith("2 bundles, 1 patterns")
    assert "credit loop failure" in text


def test_an_unusable_bundle_is_named(tmp_path):
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "attempt.json").write_text("{")
    done = patterns(str(tmp_path / "bad"))
    assert done.returncode == 2
    assert done.stderr.startswith(f"patterns: unusable bundle {tmp_path / 'bad'}")
