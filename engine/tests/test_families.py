"""Each rule family of the default pack, on real lines from public reports (rules/tests/real_lines.py)."""

from datetime import UTC, datetime

import pytest

from engine.context import Attempt, LogStream
from engine.node_names import NodeNames
from engine.normalise import Clock
from engine.tests.bundles import default_engine
from engine.tests.real_lines import REAL_LINES

ATTEMPT = Attempt(
    cluster="c", scheduler="slurm", job_id="1", attempt=0, nodes=("n1",), state="FAILED",
    start=datetime(2024, 1, 1, tzinfo=UTC), end=datetime(2024, 1, 2, tzinfo=UTC),
)  # fmt: skip


def rules_matching(stream: str, line: str) -> set[str]:
    extractor = default_engine().extractor
    clock = Clock("UTC", ATTEMPT.start, ATTEMPT.end)
    found, _ = extractor.scan_stream(
        LogStream.from_bytes(f"logs/n1/{stream}.log", stream, "n1", line.encode()), clock, NodeNames(ATTEMPT.nodes), {}
    )
    return {event.rule.id for event in found}


@pytest.mark.parametrize(
    ("stream", "line", "expected", "source"), REAL_LINES, ids=[f"{i:03d}" for i in range(len(REAL_LINES))]
)
def test_real_line(stream, line, expected, source):
    wanted = set() if expected is None else {expected} if isinstance(expected, str) else set(expected)
    assert rules_matching(stream, line) == wanted, source


def test_the_real_lines_exercise_every_log_family():
    matched = set()
    for _, _, expected, _ in REAL_LINES:
        matched |= {expected} if isinstance(expected, str) else set(expected or ())
    families = {rule_id.split(".")[0] for rule_id in matched}
    assert families >= {"gpu", "cuda", "host", "net", "nccl", "torchrun", "app", "storage", "slurm", "fabricmanager"}
