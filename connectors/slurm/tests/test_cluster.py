"""The Slurm connector against a real single-node Slurm 22.05 cluster with slurmdbd (scripts/slurm.sh).

Real jobs fail in the four ways the connector must tell apart: exit 1 after NCCL errors, a time
limit, scancel, and a node marked down under a ``--no-requeue`` job. Discovery must find them with
the right states and exit codes, and the engine must diagnose what the connector gathered. A fifth job
hangs in a collective and leaves PyTorch Flight Recorder dumps on the shared filesystem, in a folder of
its node, where ``flight_recorder_path`` finds them.

Marking the node down kills every job on it, so the node-loss job runs alone first; the other four
then run concurrently (the time limit takes about 80 s: Slurm checks limits every 30 s or so).
"""

from __future__ import annotations

import json
import os
import subprocess
import tarfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from connectors.base import DiscoveredAttempt
from connectors.gather import gather
from connectors.settings_reader import SettingError
from connectors.slurm.scheduler import SlurmScheduler
from engine.bundle import load_bundle, rfc3339

ROOT = Path(__file__).resolve().parents[3]
STRAGGLER = ROOT / "engine" / "flight_recorder" / "tests" / "dumps" / "straggler"
pytestmark = [
    pytest.mark.slurm,
    pytest.mark.skipif(os.geteuid() != 0, reason="the Slurm tests run a real Slurm cluster, which needs root"),
]


@pytest.fixture(scope="module")
def slurm_jobs(slurm, tmp_path_factory):
    node = slurm.run("hostname", "-s")
    out = tmp_path_factory.mktemp("slurm-jobs")
    out.chmod(0o777)
    (out / "fail.sh").write_text(slurm.FAIL_JOB)
    (out / "sleep.sh").write_text(slurm.SLEEP_JOB)
    begin = datetime.now(UTC) - timedelta(seconds=2)

    def sbatch(name: str, script: str, *options: str) -> str:
        return slurm.run(
            "sbatch",
            "--parsable",
            f"--job-name={name}",
            f"--output={out}/%x-%j.out",
            f"--chdir={out}",
            *options,
            str(out / script),
        ).split(";")[0]

    lost = sbatch("train-nodefail", "sleep.sh", "--no-requeue")
    slurm.wait_for([lost], {"RUNNING"}, 60)
    slurm.run("scontrol", "update", f"nodename={node}", "state=down", "reason=faultline test: node lost")
    try:
        slurm.wait_for([lost], {"NODE_FAIL"}, 60)
    finally:
        slurm.run("scontrol", "update", f"nodename={node}", "state=resume")
    deadline = time.monotonic() + 60
    while not slurm.node_state(node).startswith(("idle", "mixed")) and time.monotonic() < deadline:
        time.sleep(0.5)

    timeout = sbatch("train-timeout", "sleep.sh", "--time=1")
    failed = sbatch("train-fail", "fail.sh", f"--error={out}/%x-%j.err")
    cancelled = sbatch("train-cancel", "sleep.sh")
    (out / "hang.sh").write_text(slurm.hang_job(str(_dumps_of_now(out / "dumps")), str(out / "fr"),
                                                str(STRAGGLER / "torchrun.log")))  # fmt: skip
    hang = sbatch("train-hang", "hang.sh")
    slurm.wait_for([cancelled], {"RUNNING"}, 60)
    slurm.run("scancel", cancelled)
    slurm.wait_for([timeout, failed, cancelled, hang], {"TIMEOUT", "FAILED", "CANCELLED"}, 240)
    return {
        "node": node,
        "begin": begin,
        "out": out,
        "jobs": {"lost": lost, "timeout": timeout, "failed": failed, "cancelled": cancelled, "hang": hang},
    }


def _dumps_of_now(folder: Path) -> Path:
    """The real straggler dumps (their JSON form: rank 2 never entered all_reduce #4), with their times moved to a
    minute ago, so that they fall in the window of the job that leaves them (within its scope margin) and its ranks
    had waited past the collective's 5 s timeout when it ended, as in the real run: a hang, not a snapshot."""
    folder.mkdir()
    documents = {path.name: json.loads(path.read_text()) for path in (STRAGGLER / "json").glob("rank_*")}
    first = min(entry["time_created_ns"] for document in documents.values() for entry in document["entries"])
    shift = time.time_ns() - 60 * 10**9 - first
    for name, document in documents.items():
        for entry in document["entries"]:
            for key in ("time_created_ns", "time_discovered_started_ns", "time_discovered_completed_ns"):
                if entry.get(key):
                    entry[key] += shift
        (folder / name).write_text(json.dumps(document))
    return folder


@pytest.fixture(scope="module")
def discovered(slurm_jobs):
    """Discovery from a cursor just before the jobs; accounting may trail the jobs by a moment."""
    scheduler = SlurmScheduler("slurm", {"cluster": "faultline-test"})
    wanted = set(slurm_jobs["jobs"].values())
    deadline = time.monotonic() + 30
    while True:
        found, cursor = scheduler.discover(rfc3339(slurm_jobs["begin"]))
        by_id = {d.attempt.job_id: d for d in found if d.attempt.job_id in wanted}
        if len(by_id) == len(wanted) or time.monotonic() > deadline:
            break
        time.sleep(1)
    return scheduler, by_id, cursor


def test_discovery_finds_each_failed_job_with_its_state_and_exit_code(slurm_jobs, discovered):
    _, by_id, cursor = discovered
    jobs, node = slurm_jobs["jobs"], slurm_jobs["node"]
    assert set(by_id) == set(jobs.values())
    expected = {
        "failed": ("FAILED", "1:0"),
        "timeout": ("TIMEOUT", "0:0"),
        "cancelled": ("CANCELLED", "0:0"),
        "lost": ("NODE_FAIL", "0:0"),
        "hang": ("FAILED", "1:0"),
    }
    for role, (state, exit_code) in expected.items():
        attempt = by_id[jobs[role]].attempt
        assert (attempt.state, attempt.exit_code) == (state, exit_code), role
        assert attempt.nodes == (node,)
        assert attempt.attempt == 0
        assert attempt.scheduler == "slurm"
        assert attempt.cluster == "faultline-test"
        assert attempt.user == "root"
        assert slurm_jobs["begin"] <= attempt.start <= attempt.end
    assert by_id[jobs["failed"]].attempt.name == "train-fail"
    assert by_id[jobs["failed"]].attempt.reason == "NonZeroExitCode"
    assert by_id[jobs["timeout"]].attempt.reason == "TimeLimit"
    assert by_id[jobs["lost"]].attempt.reason == "NodeDown"
    assert by_id[jobs["cancelled"]].attempt.reason.endswith("cancelled by uid 0")
    timeout = by_id[jobs["timeout"]].attempt
    assert timedelta(seconds=55) < timeout.end - timeout.start < timedelta(seconds=150)
    assert cursor >= rfc3339(max(d.attempt.end for d in by_id.values()))


def test_a_later_poll_from_the_new_cursor_finds_no_earlier_job_past_the_overlap(slurm_jobs, discovered):
    scheduler, by_id, cursor = discovered
    quiet = SlurmScheduler("slurm", {"cluster": "faultline-test", "overlap_seconds": 0})
    later, next_cursor = quiet.discover(cursor)
    ends = {d.attempt.job_id: d.attempt.end for d in later}
    assert all(end >= datetime.fromisoformat(cursor) for end in ends.values())
    assert next_cursor >= cursor


def test_output_paths_come_from_scontrol_and_the_discovered_attempt_round_trips(slurm_jobs, discovered):
    _, by_id, _ = discovered
    failed = by_id[slurm_jobs["jobs"]["failed"]]
    assert failed.extra["stdout"] == f"{slurm_jobs['out']}/train-fail-{failed.attempt.job_id}.out"
    copy = DiscoveredAttempt.from_dict(json.loads(json.dumps(failed.to_dict())))
    assert copy == failed


@pytest.fixture(scope="module")
def diagnoses(slurm_jobs, discovered, engine):
    """Each job diagnosed from its record and its own output. (slurmd.log is left out on purpose: it
    holds every job's lines, and the default pack's time-limit line rule does not check the job id.)"""
    scheduler, by_id, _ = discovered
    return {role: engine.diagnose(gather(by_id[job_id], scheduler)) for role, job_id in slurm_jobs["jobs"].items()}


@pytest.mark.parametrize(
    ("role", "domain", "subdomain"),
    [
        ("timeout", "scheduler", "time_limit"),
        ("cancelled", "scheduler", "cancelled"),
        ("lost", "infrastructure", "node_lost"),
    ],
)
def test_the_engine_diagnoses_the_gathered_context(diagnoses, role, domain, subdomain):
    diagnosis = diagnoses[role]
    assert (diagnosis["outcome"], diagnosis["domain"], diagnosis["subdomain"]) == ("attributed", domain, subdomain)


def test_the_failed_job_is_diagnosed_from_its_output(diagnoses):
    diagnosis = diagnoses["failed"]
    assert diagnosis["outcome"] != "unattributed" or diagnosis["symptoms"]
    assert diagnosis["domain"] != "scheduler"
    refs = {item["ref"].split(":")[0] for item in diagnosis["evidence"]}
    assert "logs/stdout.out" in refs
    stdout = next(s for s in diagnosis["sources"] if s["name"] == "stdout")
    assert stdout["status"] == "ok"


def test_the_dumps_the_job_left_on_the_shared_filesystem_name_the_rank_that_stopped(slurm_jobs, discovered, engine):
    _, by_id, _ = discovered
    node, out = slurm_jobs["node"], slurm_jobs["out"]
    settings = {"cluster": "faultline-test", "flight_recorder_path": f"{out}/fr/{{job_id}}/{{node}}"}
    context = gather(by_id[slurm_jobs["jobs"]["hang"]], SlurmScheduler("slurm", settings))
    assert [trace.ref for trace in context.flight_recorder] == [f"traces/flight_recorder/rank_{r}" for r in range(4)]
    assert context.attempt.ranks == dict.fromkeys(range(4), node)  # the folder each dump was in
    diagnosis = engine.diagnose(context)
    assert (diagnosis["outcome"], diagnosis["subdomain"]) == ("attributed", "nccl.straggler")
    root = diagnosis["root_cause"]
    assert (root["rule"], root["nodes"]) == ("fr.never_entered", [node])
    assert root["summary"].startswith(f"Rank 2 on {node} never entered gloo:all_reduce #4")
    # without the setting, or for a job that left none, the dumps are simply not there
    failed = gather(by_id[slurm_jobs["jobs"]["failed"]], SlurmScheduler("slurm", settings))
    assert failed.flight_recorder == ()
    report = next(r for r in failed.reports if r.kind == "traces")
    assert (report.status, report.detail) == (
        "missing",
        f"slurm: no Flight Recorder dump in {out}/fr/{slurm_jobs['jobs']['failed']}/{node}",
    )


def test_the_dump_path_is_checked_when_the_settings_are_read():
    with pytest.raises(SettingError, match=r"names \{rank\}, which is not one of"):
        SlurmScheduler("slurm", {"cluster": "c", "flight_recorder_path": "/shared/fr/{job_id}/{rank}"})
    with pytest.raises(SettingError, match="must be an absolute path under / without '..'"):
        SlurmScheduler("slurm", {"cluster": "c", "flight_recorder_path": "fr/{job_id}"})


def test_the_epilog_builds_the_same_attempt_as_discovery(slurm_jobs, discovered, tmp_path):
    _, by_id, _ = discovered
    job_id = slurm_jobs["jobs"]["failed"]
    archive = tmp_path / "bundle.tar.gz"
    env = {**os.environ, "FAULTLINE_CLUSTER": "faultline-test"}
    subprocess.run(
        [str(ROOT / "contrib" / "slurm" / "epilog.sh"), "--bundle", str(archive), job_id],
        check=True,
        env=env,
        timeout=60,
    )
    with tarfile.open(archive) as tar:
        assert sorted(tar.getnames()) == ["attempt.json", "logs", "logs/stderr.err", "logs/stdout.out"]
        tar.extractall(tmp_path / "bundle", filter="data")
    context = load_bundle(tmp_path / "bundle", strict=True)
    found = by_id[job_id].attempt
    assert context.attempt == found
    stdout = (tmp_path / "bundle" / "logs" / "stdout.out").read_text()
    assert "RuntimeError: NCCL error" in stdout
    assert "ncclSystemError" in (tmp_path / "bundle" / "logs" / "stderr.err").read_text()
