"""The demo set: a month of failed attempts on two clusters, each diagnosed as its kind intends."""

import json
from collections import Counter
from datetime import UTC, datetime, timedelta

import pytest

from demo.bundles import verdict
from demo.dataset import plan_demo_set, write_demo_attempts, write_demo_set
from engine.bundle import load_bundle

NOW = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)


@pytest.fixture(scope="module")
def demo_set(tmp_path_factory):
    return write_demo_attempts(tmp_path_factory.mktemp("demo"), now=NOW)


def test_every_attempt_is_diagnosed_as_its_kind_intends(engine, demo_set):
    diagnoses = {written.path: engine.diagnose(load_bundle(written.path, strict=True)) for written in demo_set}

    assert [verdict(diagnoses[w.path]) for w in demo_set] == [w.intended() for w in demo_set]


def test_the_set_spans_two_clusters_many_kinds_and_a_mix_of_outcomes(demo_set):
    clusters = Counter(written.path.parent.name for written in demo_set)
    outcomes = Counter(written.outcome for written in demo_set)

    assert 30 <= len(demo_set) <= 42
    assert set(clusters) == {"dgx-a", "gke-ml"}
    assert len({written.kind for written in demo_set}) >= 12
    assert outcomes["attributed"] > len(demo_set) * 3 // 4
    assert outcomes["ambiguous"] >= 1
    assert outcomes["unattributed"] >= 2


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
    ((_, job_id),) = [job for job, count in by_job.items() if count == 2]
    first, second = [a for a in planned if a.job_id == job_id]
    assert (first.kind, first.attempt, second.attempt) == ("node-lost", 0, 1)
    assert second.start > first.start + timedelta(hours=6)


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
