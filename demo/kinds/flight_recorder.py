"""A collective hang that PyTorch's Flight Recorder explains: the bundle carries every rank's dump.

One rank stops before a collective (stuck in its own code: nothing in its logs says why) and every other rank waits
in it until its NCCL watchdog fires. The job ran with the Flight Recorder on (``TORCH_FR_BUFFER_SIZE``,
``TORCH_NCCL_DUMP_ON_TIMEOUT=1``): the watchdog prints the stack trace of the collective it gave up on, and each rank
writes its ring buffer to ``nccl_trace_rank_<rank>`` (``traces/flight_recorder/``), in which the stopped rank never
entered the collective the others started.

The dumps are built on a real one as template: ``flight_recorder_template.json`` is rank 0's JSON dump of the
healthy case of ``contrib/flight_recorder/make_dumps.py`` (torch 2.13.0, Gloo; ``_dump_fr_trace_json``), whose
entries give the field set. They are written as PyTorch writes them by default, pickles of plain data, with NCCL's
states (scheduled, started, completed) and times, and a stack per entry as the pickle carries.
"""

from __future__ import annotations

import json
import pickle
from datetime import datetime, timedelta
from pathlib import Path

from demo.draft import BundleDraft
from demo.training import NCCL_VERSION, Rank

TEMPLATE = json.loads(Path(__file__).with_name("flight_recorder_template.json").read_text())
FIELDS = frozenset(TEMPLATE["entries"][0]) | {"frames"}  # an entry's fields (JSON dumps leave the stack out)
HISTORY = 24  # collectives before the hang held in each rank's ring buffer
NOT_FOUND = "Stack trace of the failed collective not found, potentially because FlightRecorder is disabled."
# OpType -> (the Flight Recorder's profiling name, the torch.distributed call that issued it)
CALLS = {"ALLREDUCE": ("all_reduce", "all_reduce"), "_ALLGATHER_BASE": ("_allgather_base", "all_gather_into_tensor"),
         "_REDUCE_SCATTER_BASE": ("_reduce_scatter_base", "reduce_scatter_tensor")}  # fmt: skip


def rank_never_entered(d: BundleDraft) -> tuple[str, ...]:
    """A rank never enters the collective its peers wait in; their watchdogs fire; the dumps name it."""
    fault = d.trains_for(20, 300)
    straggler = d.rng.choice(d.training.ranks)
    seq, op, numel = d.training.collective()
    timeout = fault + timedelta(seconds=600)
    for rank in d.training.ranks:  # every rank but the straggler waits in the collective until its watchdog fires
        moment = timeout + timedelta(milliseconds=d.rng.randrange(0, 400))
        if rank is not straggler and d.training.is_alive(rank, moment):
            d.training.watchdog_timeout(rank, moment, seq, op, numel)
    frames = _frames(d, CALLS[op][1])
    _stack_traces_printed(d, frames)
    d.failed()
    for rank in d.training.ranks:
        dump = _dump(d, rank, straggler, seq, op, numel, fault, frames)
        d.traces[f"nccl_trace_rank_{rank.number}"] = pickle.dumps(dump, protocol=2)
    return (straggler.node,)


def _frames(d: BundleDraft, call: str) -> list[dict]:
    """The Python stack of the training loop's collective, as the Flight Recorder records it (innermost first)."""
    site = f"/usr/local/lib/{d.training.python}/dist-packages/torch/distributed"
    return [
        {"name": call, "filename": f"{site}/distributed_c10d.py", "line": d.rng.randrange(2700, 4300)},
        {"name": "wrapper", "filename": f"{site}/c10d_logger.py", "line": 83},
        {"name": "reduce_gradients", "filename": f"/workspace/{d.training.script}", "line": d.rng.randrange(200, 900)},
        {"name": "train_step", "filename": f"/workspace/{d.training.script}", "line": d.rng.randrange(900, 1400)},
    ]


def _stack_traces_printed(d: BundleDraft, frames: list[dict]) -> None:
    """With the Flight Recorder on, the watchdog prints the failed collective's stack where it would say it has none
    (ProcessGroupNCCL.cpp, printTraceback): the message, then one line per frame."""
    lines = d.training.lines
    for index, (moment, order, channel, key, text) in enumerate(list(lines)):
        if NOT_FOUND in text:
            head = text[: text.index(NOT_FOUND)]
            lines[index] = (moment, order, channel, key, f"{head}Stack trace of the failed collective: ")
            lines.extend(
                (moment, order + (n + 1) / 100, channel, key, f"#{n} {frame['name']} from {frame['filename']}:"
                 f"{frame['line']}")
                for n, frame in enumerate(frames)
            )  # fmt: skip


def _dump(d: BundleDraft, rank: Rank, straggler: Rank, seq: int, op: str, numel: int, fault: datetime, frames):
    """What ``rank`` wrote when its watchdog fired (the straggler, when the others' abort made it dump)."""
    world = d.training.world
    step = timedelta(seconds=d.training.seconds_per_iteration / 8)
    entries = []
    for number in range(seq - HISTORY, seq + (rank is not straggler)):
        created = fault - (seq - number) * step + timedelta(microseconds=d.rng.randrange(0, 900) + rank.local * 40)
        state = "completed" if number < seq else "started"
        entries.append(_entry(len(entries), number, op, numel, world, created, state, frames))
    last = seq if rank is not straggler else seq - 1
    return {
        "version": TEMPLATE["version"],
        "comm_lib_version": NCCL_VERSION,
        "pg_config": {"0": {"name": "0", "desc": "default_pg", "ranks": str(list(range(world)))}},
        "pg_status": {
            "0": {
                "last_enqueued_collective": last,
                "last_started_collective": last,
                "last_completed_collective": seq - 1,
            }
        },  # fmt: skip
        "entries": entries,
    }


def _entry(record: int, seq: int, op: str, numel: int, world: int, created: datetime, state: str, frames) -> dict:
    name = CALLS[op][0]
    sizes_in, sizes_out = [[numel]], [[numel]]
    if name == "_allgather_base":
        sizes_in = [[numel // world]]
    elif name == "_reduce_scatter_base":
        sizes_out = [[numel // world]]
    created_ns = int(created.timestamp() * 1e9)
    values = {
        "record_id": record,
        "pg_id": 0,
        "process_group": ("0", "default_pg"),
        "collective_seq_id": seq,
        "p2p_seq_id": 0,
        "op_id": seq,
        "profiling_name": f"nccl:{name}",
        "time_created_ns": created_ns,
        "input_sizes": sizes_in,
        "input_dtypes": ["BFloat16"],
        "output_sizes": sizes_out,
        "output_dtypes": ["BFloat16"],
        "state": state,
        "time_discovered_started_ns": created_ns + 41_000,
        "time_discovered_completed_ns": created_ns + 9_800_000 if state == "completed" else None,
        "retired": state == "completed",
        "timeout_ms": 600_000,
        "is_p2p": False,
        "thread_id": TEMPLATE["entries"][0]["thread_id"],
        "thread_name": "pt_main_thread",
        "frames": frames,
    }
    assert set(values) == FIELDS, "the template's field set"
    return values
