"""The demo set: a month of failed attempts on three clusters, each diagnosed as its kind intends."""

import json
import re
from collections import Counter
from datetime import UTC, datetime, timedelta

import pytest

from demo.bundles import verdict
from demo.dataset import plan_demo_set, write_demo_attempts, write_demo_set
from engine.bundle import load_bundle

NOW = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)
RELATIVE = re.compile(r"^\[ {1,2}\+\d+\.\d{6}\] ")  # dmesg -H within a minute: "[  +0.000844] "


@pytest.fixture(scope="module")
def demo_set(tmp_path_factory):
    return write_demo_attempts(tmp_path_factory.mktemp("demo"), now=NOW)


def test_every_attempt_is_diagnosed_as_its_kind_intends(engine, demo_set):
    diagnoses = {written.path: engine.diagnose(load_bundle(written.path, strict=True)) for written in demo_set}

    assert [verdict(diagnoses[w.path]) for w in demo_set] == [w.intended() for w in demo_set]


def test_the_set_spans_three_clusters_many_kinds_and_a_mix_of_outcomes(demo_set):
    clusters = Counter(written.path.parent.name for written in demo_set)
    outcomes = Counter(written.outcome for written in demo_set)

    assert 40 <= len(demo_set) <= 52
    assert set(clusters) == {"dgx-a", "dgx-b", "gke-ml"}
    assert len({written.kind for written in demo_set}) >= 12
    assert outcomes["attributed"] > len(demo_set) * 3 // 4
    assert outcomes["ambiguous"] >= 1
    assert outcomes["unattributed"] >= 2


def test_the_set_shows_hangs_relative_kernel_stamps_and_workload_output_mixed_across_nodes(demo_set):
    def record(written):
        return json.loads((written.path / "attempt.json").read_text())

    def relative(written):
        logs = written.path.glob("logs/*/dmesg.log")
        return any(RELATIVE.match(line) for log in logs for line in log.read_text().splitlines())

    def mixed(written):  # one file for every node, lines labelled by host only, no rank map
        outputs = [path for path in (written.path / "logs").iterdir() if path.is_file()]
        hosts = {line.split(": ", 1)[0] for path in outputs for line in path.read_text().splitlines()}
        return not {"ranks", "tasks_per_node"} & set(record(written)) and hosts >= set(record(written)["nodes"])

    hangs = [w for w in demo_set if w.domain == "software"]
    assert {(w.subdomain, record(w)["state"]) for w in hangs} == {
        ("nccl", "TIMEOUT"), ("framework", "CANCELLED"), ("nccl.straggler", "FAILED"),
    }  # fmt: skip
    (recorded,) = [w for w in hangs if w.subdomain == "nccl.straggler"]  # a hang whose bundle carries the dumps
    assert len(list((recorded.path / "traces" / "flight_recorder").iterdir())) == 8 * len(record(recorded)["nodes"])
    assert len([w for w in demo_set if relative(w)]) >= 5
    mixed_across_nodes = [w for w in demo_set if record(w)["scheduler"] == "slurm" and mixed(w)]
    assert len(mixed_across_nodes) >= 5
    assert any(w.nodes for w in mixed_across_nodes)  # a root cause on one node, told apart by the hosts alone


def test_some_nodes_are_at_fault_again_and_again(demo_set):
    at_fault = Counter(node for written in demo_set if written.outcome == "attributed" for node in written.nodes)

    offenders = [node for node, count in at_fault.items() if count >= 2]
    assert len(offenders) >= 3
    assert at_fault.most_common(1)[0][1] >= 3


def test_the_attempts_lie_in_the_month_before_now(demo_set):
    for written in demo_set:
        record = json.loads((written.path / "attempt.json").read_text())
        start, end = (datetime.fromisoformat(record[field]) for field in ("start", "end"))
        assert NOW - timedelta(days=30) <= start < end <= NOW


def test_a_requeued_job_has_a_second_attempt_after_its_first():
    planned = plan_demo_set(1, now=NOW)
    by_job = Counter((attempt.cluster, attempt.job_id) for attempt in planned)

    assert [attempt.start for attempt in planned] == sorted(attempt.start for attempt in planned)
    ((_, job_id),) = [job for job, count in by_job.items() if count == 2 and job[1] not in _upgraded(planned)]
    first, second = [a for a in planned if a.job_id == job_id]
    assert (first.kind, first.attempt, second.attempt) == ("node-lost", 0, 1)
    assert second.start > first.start + timedelta(hours=6)


def _upgraded(planned) -> set[str]:
    return {attempt.job_id for attempt in planned if attempt.kind == "training-completed"}


def test_the_set_is_the_same_for_the_same_seed_and_now(tmp_path):
    first = write_demo_set(tmp_path / "first", now=NOW)
    second = write_demo_set(tmp_path / "second", now=NOW)

    assert [p.relative_to(tmp_path / "first") for p in first] == [p.relative_to(tmp_path / "second") for p in second]
    for a, b in zip(first, second, strict=True):
        assert sorted(f.relative_to(a) for f in a.rglob("*")) == sorted(f.relative_to(b) for f in b.rglob("*"))
        assert all(f.read_bytes() == (b / f.relative_to(a)).read_bytes() for f in a.rglob("*") if f.is_file())
    assert plan_demo_set(2, now=NOW) != plan_demo_set(1, now=NOW)


def test_now_must_say_its_time_zone():
    with pytest.raises(ValueError, match="aware"):
        plan_demo_set(1, now=datetime(2025, 6, 1, 12, 0))  # noqa: DTZ001


def test_the_set_has_a_requeue_and_a_job_that_worked_before_it_failed(demo_set):
    records = [json.loads((written.path / "attempt.json").read_text()) for written in demo_set]
    jobs: dict[tuple[str, str], list[dict]] = {}
    for record in records:
        jobs.setdefault((record["cluster"], record["job_id"]), []).append(record)
    several = {key: sorted(runs, key=lambda r: r["attempt"]) for key, runs in jobs.items() if len(runs) > 1}
    states = sorted([run["state"] for run in runs] for runs in several.values())
    assert states == [["COMPLETED", "FAILED"], ["NODE_FAIL", "TIMEOUT"]]  # the upgraded job, the requeue
    ((good, failed),) = [runs for runs in several.values() if runs[0]["state"] == "COMPLETED"]
    assert good["start"] < failed["start"]
    assert good["name"] == failed["name"]
    assert good["user"] == failed["user"]
    assert len(set(good["nodes"]) & set(failed["nodes"])) == 3  # one node swapped

    def nccl(record):
        written = next(w for w in demo_set if w.path.name == f"{record['job_id']}-{record['attempt']}")
        logs = [path for path in (written.path / "logs").rglob("*") if path.is_file()]
        return {m for path in logs for m in re.findall(r"NCCL version (\S+)", path.read_text())}

    assert (nccl(good), nccl(failed)) == ({"2.21.5+cuda12.6"}, {"2.23.4+cuda12.6"})
