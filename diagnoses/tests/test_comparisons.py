"""The comparison's reading of the step each attempt reached (``comparisons.step_reached``): the last step line of
the application's output, read from each stream's end a block at a time. Pure: no database."""

from datetime import UTC, datetime

import pytest

from diagnoses import comparisons
from engine.context import Attempt, AttemptContext, LogStream

ATTEMPT = Attempt(cluster="dgx", scheduler="slurm", job_id="1", attempt=0, nodes=("node01",),
                  start=datetime(2026, 11, 2, 10, tzinfo=UTC), end=datetime(2026, 11, 2, 11, tzinfo=UTC),
                  state="FAILED")  # fmt: skip
MEGATRON = " [2026-11-02 10:{:02d}:00] iteration {:>8}/{:>8} | consumed samples: 1024 | lm loss: 2.1E+00 |"


def context(*streams: tuple[str, bytes]) -> AttemptContext:
    return AttemptContext(
        attempt=ATTEMPT,
        streams=tuple(LogStream.from_bytes(f"logs/{name}.log", name, None, data) for name, data in streams),
    )


@pytest.mark.parametrize("block", [160, 1 << 20])  # blocks that cut lines, and one block for the whole stream
def test_the_last_step_line_with_its_line_number(monkeypatch, block):
    monkeypatch.setattr(comparisons, "TAIL_BLOCK", block)
    lines = [MEGATRON.format(minute, step, 5000) for minute, step in enumerate((100, 200, 300))]
    lines += ["NCCL WARN something else entirely, no step here"] * 20
    found = comparisons.step_reached(context(("train", "\n".join(lines).encode() + b"\n")))
    assert found == {"step": 300, "of": 5000, "ref": "logs/train.log:3", "text": lines[2].strip()}


@pytest.mark.parametrize(
    ("line", "step", "of"),
    [
        ("[2026-11-02 10:00:00,123] [INFO] [logging.py:128:log_dist] [Rank 0] step=420, skipped=0, lr=[0.0003]", 420,
         None),
        ("[rank0]:[titan] 2026-11-02 10:00:00,000 - root - INFO - step: 37  loss:  7.1234  memory: 30.1GiB", 37, None),
        ("iter 1900: loss 3.2210, time 140.21ms, mfu 38.12%", 1900, None),
        ("completed step: 812, seconds: 3.402, TFLOP/s/device: 180.1, loss: 2.950", 812, None),
        ("2026-11-02 10:00:00 - INFO - __main__ - step 96/1000 | loss 2.3013 | lr 3e-4", 96, 1000),
    ],
)  # fmt: skip
def test_each_known_step_line(line, step, of):
    found = comparisons.step_reached(
        context(("train", f"starting\n{line}\nTraceback (most recent call last):\n".encode()))
    )
    assert (found["step"], found["of"], found["ref"]) == (step, of, "logs/train.log:2")


def test_the_highest_step_of_the_streams_and_only_the_application_output(monkeypatch):
    rank0 = MEGATRON.format(1, 900, 1000).encode()
    stale = MEGATRON.format(1, 400, 1000).encode()
    syslog = b"Nov  2 10:00:00 node01 kernel: step 99999 loss of carrier on eth0\n"
    found = comparisons.step_reached(context(("stale", stale), ("train", rank0), ("syslog", syslog)))
    assert (found["step"], found["ref"]) == (900, "logs/train.log:1")
    assert comparisons.step_reached(context(("syslog", syslog))) is None


def test_a_step_line_before_the_last_bytes_read_is_not_found(monkeypatch):
    monkeypatch.setattr(comparisons, "TAIL_BLOCK", 256)
    monkeypatch.setattr(comparisons, "TAIL_BYTES", 1024)
    filler = b"".join(b"rank %04d waiting on the barrier\n" % n for n in range(100))  # 3,300 bytes after it
    assert comparisons.step_reached(context(("train", MEGATRON.format(0, 10, 20).encode() + b"\n" + filler))) is None
    found = comparisons.step_reached(context(("train", filler[:600] + MEGATRON.format(0, 10, 20).encode() + b"\n")))
    assert (found["step"], found["ref"]) == (10, "logs/train.log:19")
