"""Every failure kind writes a bundle that the default rule pack diagnoses as intended, deterministically."""

import json
import re
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from demo.bundles import KINDS, example, verdict
from demo.sites import DGX_B200, DGX_B200_PDSH, GKE_A3_ULTRA
from demo.systemlog import SystemLog
from engine import to_json
from engine.bundle import load_bundle, write_bundle

SEEDS = (1, 2)  # with two seeds, a kind that runs on Slurm and Kueue is written for both
START = datetime(2025, 3, 2, 8, 0, tzinfo=UTC)
SLURM_JOB = {
    "cluster": "dgx-a",
    "job_id": "4100001",
    "nodes": ("dgx-b200-0401", "dgx-b200-0402", "dgx-b200-0403"),
    "start": START,
    "seed": 3,
}
KUEUE_JOB = {
    "cluster": "gke-ml",
    "job_id": "job-t5-xxl-distill-0a1b2",
    "start": START,
    "seed": 3,
    "nodes": ("gke-ml-a3u-pool-0f1e2d3c-ab12", "gke-ml-a3u-pool-0f1e2d3c-cd34"),
}


RELATIVE = re.compile(r"^\[ {1,2}\+\d+\.\d{6}\] ")  # dmesg -H within a minute: "[  +0.000844] "
RANK_LABEL = re.compile(r"^(?:\d+: |\[default\d+\]:)")  # srun --label, torchrun


def files(root):
    return {str(path.relative_to(root)): path.read_bytes() for path in sorted(root.rglob("*")) if path.is_file()}


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("kind", sorted(KINDS))
def test_each_kind_is_diagnosed_as_intended(engine, tmp_path, kind, seed):
    written = example(kind, seed, tmp_path / "bundle")

    diagnosis = engine.diagnose(load_bundle(written.path, strict=True))

    assert verdict(diagnosis) == written.intended()
    assert [s for s in diagnosis["sources"] if s["status"] not in ("ok", "missing")] == []


def test_the_kinds_cover_the_outcomes_and_both_schedulers():
    outcomes = {kind.outcome for kind in KINDS.values()}
    schedulers = {scheduler for kind in KINDS.values() for scheduler in kind.schedulers}

    assert outcomes == {"attributed", "ambiguous", "unattributed"}
    assert schedulers == {"slurm", "kueue"}
    assert len(KINDS) >= 20


@pytest.mark.parametrize(
    "kind",
    ["gpu-fallen-off-bus", "k8s-oomkilled", "node-lost", "lustre-outage", "collective-hang", "hang-after-completion"],
)
def test_same_arguments_give_byte_identical_bundles_and_diagnoses(engine, tmp_path, kind):
    first = example(kind, 5, tmp_path / "first").path
    second = example(kind, 5, tmp_path / "second").path

    assert files(first) == files(second)
    assert to_json(engine.diagnose(load_bundle(first))) == to_json(engine.diagnose(load_bundle(second)))


def test_the_seed_varies_nodes_job_times_and_log_forms(tmp_path):
    attempts, streams = [], set()
    for seed in range(1, 8, 2):  # odd seeds: the Slurm side of a kind that runs on both
        path = example("gpu-ecc-dbe", seed, tmp_path / str(seed)).path
        attempts.append(json.loads((path / "attempt.json").read_text()))
        streams |= {log.name for log in (path / "logs").glob("*/*.log") if log.parent.name in attempts[-1]["nodes"]}

    assert len({a["job_id"] for a in attempts}) == len(attempts)
    assert len({a["nodes"][0] for a in attempts}) == len(attempts)
    assert len({a["start"] for a in attempts}) == len(attempts)
    assert len({a["timezone"] for a in attempts}) >= 2
    assert len(streams & {"syslog.log", "journal.log", "messages.log", "dmesg.log"}) >= 2
    assert {"tasks_per_node" in a for a in attempts} == {True, False}  # srun or torchrun, and pdsh


def test_dmesg_h_prints_the_local_minute_when_it_changes_and_else_the_time_since_the_previous_line():
    log = SystemLog("node01", "dmesg-H", ZoneInfo("Europe/Paris"), START, "6.8.0-1021-nvidia", "570.133.20", "")
    at = datetime(2025, 11, 2, 9, 14, 7, 500_000, tzinfo=UTC)  # 10:14:07.5 in Paris
    log.kernel(at, "a")
    log.daemon(at, "systemd[1]", "not a kernel message")
    log.kernel(at + timedelta(microseconds=844), "b")
    log.kernel(at + timedelta(seconds=12.5), "c")
    log.kernel(at + timedelta(seconds=53), "d")
    log.kernel(at + timedelta(days=10), "e")

    assert log.render().decode().splitlines() == [
        "[Nov 2 10:14] a",
        "[  +0.000844] b",
        "[ +12.499156] c",
        "[Nov 2 10:15] d",
        "[Nov12 10:14] e",
    ]


@pytest.mark.parametrize("kind", ["gpu-fallen-off-bus", "gpu-ecc-dbe", "ib-port-down", "host-oom"])
def test_kernel_evidence_kept_by_dmesg_h_is_dated_by_its_neighbours_and_still_decides(engine, tmp_path, kind):
    site = replace(DGX_B200, system_log="dmesg-H")
    written = KINDS[kind].write(tmp_path / "bundle", site=site, **SLURM_JOB)
    lines = [line for log in written.path.glob("logs/*/dmesg.log") for line in log.read_text().splitlines()]

    diagnosis = engine.diagnose(load_bundle(written.path, strict=True))

    assert any(RELATIVE.match(line) for line in lines)
    assert verdict(diagnosis) == written.intended()
    kernel = [e for e in diagnosis["evidence"] if e["source"] == "dmesg"]
    assert kernel
    assert all(e.get("time_approx") and len(e["time_bounds"]) == 2 for e in kernel)


@pytest.mark.parametrize(
    "kind", ["python-exception", "cuda-oom", "gpu-ecc-dbe", "host-oom", "nan-loss", "node-lost", "collective-hang"]
)
def test_a_pdsh_site_writes_one_workload_file_whose_lines_name_only_their_host(engine, tmp_path, kind):
    written = KINDS[kind].write(tmp_path / "bundle", site=DGX_B200_PDSH, **SLURM_JOB)
    record = json.loads((written.path / "attempt.json").read_text())
    output = written.path / "logs" / "slurm-4100001.out"
    lines = output.read_text().splitlines()

    diagnosis = engine.diagnose(load_bundle(written.path, strict=True))

    assert not {"tasks_per_node", "ranks"} & set(record)
    assert sorted(p.relative_to(written.path / "logs").as_posix() for p in written.path.glob("logs/**/*.*")) == [
        *(f"{node}/dmesg.log" for node in SLURM_JOB["nodes"]),
        output.name,
    ]
    assert {line.split(": ", 1)[0] for line in lines} >= set(SLURM_JOB["nodes"])
    assert not any(RANK_LABEL.match(line) for line in lines)
    assert verdict(diagnosis) == written.intended()


def test_a_collective_hang_leaves_watchdog_reports_then_silence_until_the_time_limit(tmp_path):
    written = KINDS["collective-hang"].write(
        tmp_path / "bundle", site=replace(DGX_B200, launchers=("srun",)), **SLURM_JOB
    )
    record = json.loads((written.path / "attempt.json").read_text())
    output = (written.path / "logs" / "slurm-4100001.out").read_text()
    lines = output.splitlines()
    progress = [i for i, line in enumerate(lines) if re.search(r" iteration +\d+/| step=\d+, skipped=", line)]
    reports = [i for i, line in enumerate(lines) if "Watchdog caught collective operation timeout" in line]

    assert record["state"] == "TIMEOUT"
    assert progress
    assert len(reports) == 3 * 8 - 1  # every rank but the one that never joined the collective
    assert max(progress) < min(reports)
    assert "taking the entire process down" not in output
    after = [line for line in lines[max(reports) :] if "ProcessGroupNCCL.cpp" not in line]
    assert "DUE TO TIME LIMIT" in after[0]  # nothing between the watchdog's reports and the time limit


def test_after_training_completes_every_rank_but_one_exits_and_the_job_waits_for_its_user(tmp_path):
    written = KINDS["hang-after-completion"].write(tmp_path / "bundle", site=DGX_B200_PDSH, **SLURM_JOB)
    record = json.loads((written.path / "attempt.json").read_text())
    lines = (written.path / "logs" / "slurm-4100001.out").read_text().splitlines()
    done = next(i for i, line in enumerate(lines) if "[after training is done] datetime: " in line)

    assert record["state"] == "CANCELLED"
    assert [line for line in lines if "exits successfully." in line] == [
        line for line in lines[done + 1 : -1] if "exits successfully." in line
    ]
    assert len(lines[done + 1 : -1]) == 3 * 8 - 1
    assert lines[-1].startswith("slurmstepd: error: *** JOB 4100001 ON dgx-b200-0401 CANCELLED AT ")


def test_a_raw_dmesg_keeps_the_boot_lines_that_anchor_kernel_uptime(tmp_path):
    path = (
        KINDS["gpu-fallen-off-bus"]
        .write(tmp_path / "bundle", site=replace(GKE_A3_ULTRA, system_log="dmesg"), **KUEUE_JOB)
        .path
    )
    logs = sorted(path.glob("logs/*/dmesg.log"))

    assert len(logs) == len(KUEUE_JOB["nodes"])
    for log in logs:
        head = log.read_text().splitlines()[:10]
        assert head[0].startswith("[    0.000000] Linux version ")
        assert any("rtc_cmos 00:02: setting system clock to " in line for line in head)


def test_a_lost_nodes_log_stops_and_slurm_names_it(tmp_path):
    written = KINDS["node-lost"].write(tmp_path / "bundle", site=DGX_B200, culprit="dgx-b200-0402", **SLURM_JOB)
    events = json.loads((written.path / "events" / "slurmctld.json").read_text())
    down = next(datetime.fromisoformat(e["time"]) for e in events if "not responding" in e["message"])

    def last_line(node):  # classic syslog in the site's time zone: "May  8 09:06:37 node ..."
        stamp = (written.path / "logs" / node / "syslog.log").read_text().splitlines()[-1][:15]
        zone = ZoneInfo(DGX_B200.timezone)
        return datetime.strptime(f"{down.year} {stamp}", "%Y %b %d %H:%M:%S").replace(tzinfo=zone)

    assert written.nodes == ("dgx-b200-0402",)
    assert (down - last_line("dgx-b200-0402")).total_seconds() >= 300  # silent from the fault to SlurmdTimeout
    assert all(last_line(node) > down for node in SLURM_JOB["nodes"] if node != "dgx-b200-0402")
    assert "srun: error: Node failure on dgx-b200-0402" in (written.path / "logs/slurm-4100001.out").read_text()


def test_a_kind_refuses_a_culprit_outside_the_attempt_and_an_unknown_scheduler(tmp_path):
    arguments = {**SLURM_JOB, "nodes": ("node01", "node02")}

    with pytest.raises(ValueError, match="culprit 'node09' is not one of the attempt's nodes"):
        KINDS["gpu-ecc-dbe"].write(tmp_path / "a", culprit="node09", **arguments)
    with pytest.raises(ValueError, match="runs on kueue, not slurm"):
        KINDS["k8s-oomkilled"].write(tmp_path / "b", scheduler="slurm", **arguments)
    with pytest.raises(ValueError, match="needs at least 2 nodes"):
        KINDS["two-hardware-faults"].write(tmp_path / "c", **{**arguments, "nodes": ("node01",)})


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_every_kind_written_back_by_the_bundle_writer_gets_the_byte_identical_diagnosis(kind, tmp_path, engine):
    original = load_bundle(example(kind, 3, tmp_path / "demo").path)
    write_bundle(original, tmp_path / "rewritten")
    assert to_json(engine.diagnose(load_bundle(tmp_path / "rewritten"))) == to_json(engine.diagnose(original))
