"""How log streams are scanned for speed, each way giving the diagnosis the plain way gives: progress lines
matched last to first, those a (rule, node) no longer needs skipped unread (``latest_progress``); streams
scanned by several threads."""

import json
from datetime import UTC, datetime, timedelta

import pytest

from engine import Engine, blocks, load_rules, streams, to_json
from engine.bundle import load_bundle
from engine.extract import Extractor
from engine.tests.bundles import DEFAULT_PACK, NODES, diagnose_bundle, write_bundle

START = datetime(2026, 11, 2, 9, 0, tzinfo=UTC)
CANCELLED = "slurmstepd: error: *** JOB 48213 ON node01 CANCELLED AT 2026-11-02T12:00:00 DUE TO TIME LIMIT ***"


def training_log(ranks: int, steps: int, *, prefix=lambda rank: f"[rank{rank}]: ") -> list[str]:
    """Step lines of every rank: a second apart at first, then a minute apart for the last 40 steps, a few
    undated; the job stops an hour before the attempt ends (a hang)."""
    lines = []
    moment = START
    for step in range(steps):
        moment += timedelta(seconds=60 if step >= steps - 40 else 1)
        for rank in range(ranks):
            stamp = "" if step % 17 == 5 else f"{moment:%Y-%m-%d %H:%M:%S},000 "
            lines.append(f"{prefix(rank)}{stamp}INFO step {step} loss {2 + step / 1000:.4f} lr 3.0e-04")
    return lines


def every_line(engine: Engine) -> Engine:
    """The same engine matching every progress line first to last (the shortcut turned off)."""
    engine.extractor = Extractor(engine.ruleset, shortcut=False)
    return engine


def iterations(count: int) -> list[str]:
    """Megatron's iteration lines (another progress rule than the step lines), a minute apart from START."""
    return [
        f"[{START + timedelta(minutes=i):%Y-%m-%d %H:%M:%S}] iteration {i:>8}/  500000 | consumed samples: {i * 512} |"
        for i in range(1, count + 1)
    ]


@pytest.mark.parametrize(
    ("block_bytes", "window"),
    [
        (blocks.BLOCK_BYTES, streams.LATEST_WINDOW),
        (4096, streams.LATEST_WINDOW),
        (4096, 300),
        (1 << 20, 300),
    ],
)
def test_the_diagnosis_is_the_one_every_line_gives(tmp_path, monkeypatch, block_bytes, window):
    monkeypatch.setattr(blocks, "BLOCK_BYTES", block_bytes)  # 4096: the lines span many blocks
    monkeypatch.setattr(streams, "LATEST_WINDOW", window)  # 300: a block's progress read a few lines at a time
    own = [*iterations(50), *training_log(1, 90, prefix=lambda rank: ""), "INFO data iter 7: loss pending"]
    logs = {
        "train.log": training_log(16, 120),  # ranks on both nodes, no node of its own
        f"{NODES[0]}/worker.log": own,  # a node's own stream: its iteration lines stop long before its step lines
        "slurm-48213.out": [CANCELLED],
    }
    bundle = write_bundle(tmp_path, logs=logs, end="2026-11-02T12:00:00Z", state="TIMEOUT", exit_code="0:15")
    shortcut, plain = Engine(load_rules(DEFAULT_PACK)), every_line(Engine(load_rules(DEFAULT_PACK)))
    result = diagnose_bundle(bundle, shortcut)
    assert result["root_cause"]["rule"] == "hang.stalled"  # the cadence and last lines are what it rests on
    assert result == diagnose_bundle(bundle, plain)
    assert progress(shortcut, bundle) == progress(plain, bundle)


def progress(engine: Engine, bundle) -> list:
    """Each stream's progress records: (rule, node), its last line and when, the times of its cadence."""
    _, stats = engine.extractor.extract(load_bundle(bundle))
    return [
        (stat.stream.ref, key, p.event.ref, p.event.time, p.event.low, p.event.high, list(p.times))
        for stat in stats
        for key, p in sorted(stat.progress.items(), key=lambda item: (item[0][0], str(item[0][1])))
    ]


def test_streams_scanned_by_threads_give_the_same_diagnosis(tmp_path):
    """``threads``: the streams are scanned concurrently (Hyperscan releases the GIL), each thread with its own
    scratch space; the events, and so the diagnosis, are those of one thread, byte for byte."""
    logs = {f"{node}/train.log": training_log(8, 60 + 10 * index) for index, node in enumerate(NODES)}
    logs |= {f"{node}/syslog.log": gpu_lines(node) for node in NODES}
    logs["slurm-48213.out"] = [CANCELLED]
    bundle = write_bundle(tmp_path, logs=logs, end="2026-11-02T12:00:00Z", state="TIMEOUT", exit_code="0:15")
    engine = Engine(load_rules(DEFAULT_PACK))
    serial = to_json(engine.diagnose(load_bundle(bundle)))
    assert json.loads(serial)["evidence"]
    for threads in (2, 3, 8):
        assert to_json(engine.diagnose(load_bundle(bundle), threads=threads)) == serial


def gpu_lines(node: str) -> list[str]:
    return [
        f"Nov  2 09:{minute:02d}:07 {node} kernel: NVRM: Xid (PCI:0000:3b:00): {63 if minute % 7 else 79}, GPU event"
        for minute in range(0, 50, 3)
    ]
