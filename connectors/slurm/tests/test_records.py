"""Slurm's text outputs: hostlists, ``sacct -P`` lines and ``scontrol show job -o`` records."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from connectors.base import ConnectorError
from connectors.slurm.hostlist import expand_hostlist
from connectors.slurm.records import parse_sacct, parse_scontrol_job
from connectors.slurm.scheduler import SlurmScheduler


@pytest.mark.parametrize(
    ("expression", "nodes"),
    [
        ("node[01-04,07]", ["node01", "node02", "node03", "node04", "node07"]),
        ("vm", ["vm"]),
        ("gpu[8-11]", ["gpu8", "gpu9", "gpu10", "gpu11"]),
        ("n[098-101]", ["n098", "n099", "n100", "n101"]),
        ("rack[1-2]-gpu[1-2]", ["rack1-gpu1", "rack1-gpu2", "rack2-gpu1", "rack2-gpu2"]),
        ("a1,b[3-4],a1", ["a1", "b3", "b4"]),
        ("dgx-[0473,0475]-ib", ["dgx-0473-ib", "dgx-0475-ib"]),
    ],
)
def test_hostlists_expand(expression, nodes):
    assert expand_hostlist(expression) == nodes


@pytest.mark.parametrize("expression", ["node[01-04", "node01]", "node[a-b]", "node[4-1]"])
def test_bad_hostlists_are_permanent_errors_naming_the_expression(expression):
    with pytest.raises(ConnectorError, match="hostlist") as caught:
        expand_hostlist(expression)
    assert caught.value.permanent


SACCT = """\
48213|48213|alice|node[01-04]|2026-11-02T09:00:00|2026-11-02T10:24:07|NODE_FAIL|0:0|/home/alice|train|big
48214|48214|bob|gpu07|2026-11-02T09:30:00|2026-11-02T10:30:00|CANCELLED by 1004|0:15|/home/bob|sweep
48215|48215|bob|None assigned|None|2026-11-02T10:31:00|CANCELLED by 1004|0:0|/home/bob|queued
48216|48216|carol|gpu01|2026-11-02T10:00:00|Unknown|RUNNING|0:0|/home/carol|live
broken line
"""


def test_sacct_lines_become_records_and_bad_lines_are_named():
    records, bad = parse_sacct(SACCT)
    assert [r.job_id for r in records] == ["48213", "48214", "48215", "48216"]
    lost, cancelled, queued, running = records
    assert lost.nodes == ("node01", "node02", "node03", "node04")
    assert lost.name == "train|big"  # a '|' in the last field, the job name, stays in the name
    assert lost.end == datetime(2026, 11, 2, 10, 24, 7, tzinfo=UTC)
    assert (cancelled.state, cancelled.cancelled_by, cancelled.exit_code) == ("CANCELLED", "1004", "0:15")
    assert not queued.started
    assert running.end is None
    assert bad == ["sacct line 5: expected 10 '|'-separated fields, got 1: 'broken line'"]


def test_scontrol_records_keep_values_with_spaces():
    line = (
        "JobId=9 JobName=train fail UserId=root(0) JobState=FAILED Reason=NonZeroExitCode ExitCode=1:0 "
        "TRES=cpu=1,node=1 ReqB:S:C:T=0:0:*:* StdErr=/jobs/train-9.err StdIn=/dev/null StdOut=/jobs/train-9.out "
        "Power="
    )
    pairs = parse_scontrol_job(line)
    assert pairs["JobName"] == "train fail"
    assert pairs["TRES"] == "cpu=1,node=1"
    assert pairs["StdOut"] == "/jobs/train-9.out"
    assert pairs["Power"] == ""


def test_path_mapping_takes_the_longest_prefix_and_output_templates_fill_in(tmp_path):
    scheduler = SlurmScheduler(
        "slurm", {"cluster": "c", "path_map": {"/home": "/mnt/home", "/home/alice/scratch": "/s"}}
    )
    assert str(scheduler.local_path("/home/alice/job.out")) == "/mnt/home/alice/job.out"
    assert str(scheduler.local_path("/home/alice/scratch/x.out")) == "/s/x.out"
    assert str(scheduler.local_path("/homework/x")) == "/homework/x"


def test_slurm_settings_are_checked():
    with pytest.raises(ConnectorError, match="'cluster' is required"):
        SlurmScheduler("slurm", {})
    with pytest.raises(ConnectorError, match="names no known time zone"):
        SlurmScheduler("slurm", {"cluster": "c", "timezone": "Mars/Olympus"})


def test_a_missing_command_is_permanent_and_a_failing_one_transient(tmp_path):
    missing = SlurmScheduler("slurm", {"cluster": "c", "command_prefix": [str(tmp_path / "nowhere")]})
    with pytest.raises(ConnectorError, match="not found") as caught:
        missing.discover(None)
    assert caught.value.permanent
    script = tmp_path / "down.sh"
    script.write_text(
        "#!/bin/sh\necho 'sacct: error: Problem talking to the database: Connection refused' >&2\nexit 1\n"
    )
    script.chmod(0o755)
    down = SlurmScheduler("slurm", {"cluster": "c", "command_prefix": [str(script)]})
    with pytest.raises(ConnectorError, match="Connection refused") as caught:
        down.discover(None)
    assert not caught.value.permanent
