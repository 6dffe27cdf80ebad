"""One rank of a small Gloo job that leaves PyTorch Flight Recorder dumps (run by make_dumps.py under torchrun).

Every rank runs a few collectives on the CPU with the Gloo backend; in every case but `healthy` one rank (the culprit)
misbehaves before collective number `--fault-at` of the default process group:

    straggler      sleeps far past the collective timeout before entering it
    dead           kills itself with SIGKILL (no dump is left)
    wrong_op       calls broadcast where the others call all_reduce
    size_mismatch  calls all_reduce on a tensor of another size
    dtype_mismatch calls all_reduce on a tensor of another dtype

Four cases run a job of several process groups instead (`--case` below; the culprit is named by make_dumps.py):

    cross_group       8 ranks, tensor-parallel pairs and data-parallel groups of 4; each step all_reduces in its
                      tensor group, its data group, then the default group. The culprit sleeps before the data
                      group's all_reduce of step `--fault-at`: its data group waits in that all_reduce, the other
                      data group goes on to the default group's and waits there for every rank held up.
    first_collective  4 ranks; after three all_reduces of the default group, a new group of ranks 1-3 is created and
                      its members all_reduce in it: the culprit sleeps before that first collective, rank 0 (not a
                      member) has nothing more to do.
    snapshot          4 ranks, a 60 s timeout, a healthy loop that prints a progress line per step while rank 1
                      computes 0.3 s longer than the others (so the others are always inside an all_reduce). Nothing
                      fails: make_dumps.py cancels the job (SIGTERM to torchrun, as a scheduler does) and every rank
                      dumps when the signal reaches it, a fraction of a second into a collective.
    four_groups       8 ranks in tensor (pairs), pipeline (two stages: a broadcast from the first stage to the
                      second), data and default groups; the culprit, a second-stage rank, sleeps before the pipeline
                      broadcast of step `--fault-at`.

How the dump is taken. ProcessGroupGloo records every collective in the Flight Recorder ring buffer
(TORCH_FR_BUFFER_SIZE), but only ProcessGroupNCCL's watchdog writes the dump on a timeout: it sets the store key
`exception_dump` and every rank's monitor thread then writes the buffer through the default DebugInfoWriter to
`$TORCH_FR_DUMP_TEMP_FILE<rank>` (older name TORCH_NCCL_DEBUG_INFO_TEMP_FILE). This job does the same for Gloo: a
watcher thread on each rank polls a store key and, once it is set, writes
torch._C._distributed_c10d._dump_fr_trace() (the pickle the NCCL writer writes) to `<prefix><rank>` and, when
FAULTLINE_FR_JSON_PREFIX is set, _dump_fr_trace_json() to `<json prefix><rank>`. The rank whose collective fails
sets the key, as the NCCL watchdog does; in the healthy case the last rank to finish sets it. torchrun stops the
other ranks with SIGTERM as soon as one fails; each rank writes its dump before it obeys.
"""

import argparse
import datetime
import os
import signal
import sys
import threading
import time

import torch
import torch._C._distributed_c10d as c10d
import torch.distributed as dist

SINGLE_GROUP_CASES = ("healthy", "straggler", "dead", "wrong_op", "size_mismatch", "dtype_mismatch")
GROUP_CASES = ("cross_group", "first_collective", "snapshot", "four_groups")
DUMP_KEY = "faultline_fr_dump"
DUMPED_KEY = "faultline_fr_dumped"
FINISHED_KEY = "faultline_fr_finished"


def write_atomically(path: str, data: bytes) -> None:
    with open(path + ".tmp", "wb") as out:
        out.write(data)
    os.replace(path + ".tmp", path)


def watch_and_dump(store: dist.TCPStore, rank: int, done: threading.Event) -> None:
    while not store.check([DUMP_KEY]):
        time.sleep(0.05)
    time.sleep(0.2)  # let the Gloo worker threads retire the entries of collectives that just finished
    write_atomically(os.environ["TORCH_FR_DUMP_TEMP_FILE"] + str(rank), c10d._dump_fr_trace(True, True, False))
    json_prefix = os.environ.get("FAULTLINE_FR_JSON_PREFIX")
    if json_prefix:
        write_atomically(json_prefix + str(rank), c10d._dump_fr_trace_json(True, False))
    store.add(DUMPED_KEY, 1)
    done.set()


def wait_for_dumps(store: dist.TCPStore, expected: int, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while store.add(DUMPED_KEY, 0) < expected and time.monotonic() < deadline:
        time.sleep(0.05)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--case", required=True, choices=[*SINGLE_GROUP_CASES, *GROUP_CASES])
    parser.add_argument("--culprit", type=int, default=1)
    parser.add_argument("--fault-at", type=int, default=4, help="collective sequence number of the fault")
    parser.add_argument("--total", type=int, default=5, help="collectives on the default group")
    parser.add_argument("--timeout", type=float, default=5.0, help="collective timeout in seconds")
    args = parser.parse_args()

    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=args.timeout))
    rank, world = dist.get_rank(), dist.get_world_size()
    # Clients of their own on the launcher's store: one for the watcher thread, one for this thread.
    address, port = os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"])
    store = dist.TCPStore(address, port, is_master=False)
    dumped = threading.Event()
    threading.Thread(
        target=watch_and_dump, args=(dist.TCPStore(address, port, is_master=False), rank, dumped), daemon=True
    ).start()

    def on_sigterm(*_):
        # torchrun stops the other ranks as soon as one dies: ask for the dumps and write this one first (the NCCL
        # watchdog has the same grace, TORCH_NCCL_WAIT_TIMEOUT_DUMP_MILSEC).
        store.compare_set(DUMP_KEY, "", str(rank))
        dumped.wait(15)
        sys.exit(143)

    signal.signal(signal.SIGTERM, on_sigterm)
    if args.case in GROUP_CASES:
        return run_groups(args, rank, world, store, dumped)

    # A second process group over the even ranks, so that the dumps hold more than one group.
    evens = dist.new_group(list(range(0, world, 2)))
    tensor = torch.ones(4)
    try:
        for seq in range(1, args.total + 1):
            culprit = rank == args.culprit and seq == args.fault_at and args.case != "healthy"
            if culprit and args.case == "straggler":
                time.sleep(args.timeout * 20)
            if culprit and args.case == "dead":
                os.kill(os.getpid(), signal.SIGKILL)
            if culprit and args.case == "wrong_op":
                dist.broadcast(tensor, src=args.culprit)
            elif culprit and args.case == "size_mismatch":
                dist.all_reduce(torch.ones(8))
            elif culprit and args.case == "dtype_mismatch":
                dist.all_reduce(torch.ones(4, dtype=torch.float64))
            else:
                dist.all_reduce(tensor)
            if seq == 2 and rank % 2 == 0:
                dist.all_reduce(tensor, group=evens)
    except RuntimeError as error:
        print(f"rank {rank}: {error}", file=sys.stderr, flush=True)
        store.compare_set(DUMP_KEY, "", str(rank))
        dumped.wait(10)
        wait_for_dumps(store, world, 5)
        return 1
    if store.add(FINISHED_KEY, 1) == world:
        store.compare_set(DUMP_KEY, "", str(rank))
    dumped.wait(60)
    wait_for_dumps(store, world, 10)
    return 0


def run_groups(args, rank: int, world: int, store: dist.TCPStore, dumped: threading.Event) -> int:
    """The jobs of several process groups (see the module's docstring); what a failing rank does is main()'s."""
    tensor = torch.ones(4)
    try:
        if args.case == "cross_group":
            cross_group(args, rank, world, tensor)
        elif args.case == "first_collective":
            first_collective(args, rank, tensor)
        elif args.case == "snapshot":
            snapshot(args, rank, tensor)
        else:
            four_groups(args, rank, world, tensor)
    except RuntimeError as error:
        print(f"rank {rank}: {error}", file=sys.stderr, flush=True)
        store.compare_set(DUMP_KEY, "", str(rank))
        dumped.wait(10)
        wait_for_dumps(store, world, 5)
        return 1
    if store.add(FINISHED_KEY, 1) == world:
        store.compare_set(DUMP_KEY, "", str(rank))
    dumped.wait(60)
    wait_for_dumps(store, world, 10)
    return 0


def own_group(groups: list[list[int]], desc: str, timeout: float):
    """Every rank creates every group (torch.distributed requires it), in the same order; its own one is returned.
    A new group does not take the default group's timeout: it is given."""
    mine = None
    for members in groups:
        group = dist.new_group(members, timeout=datetime.timedelta(seconds=timeout), group_desc=desc)
        if dist.get_rank() in members:
            mine = group
    return mine


def cross_group(args, rank: int, world: int, tensor: torch.Tensor) -> None:
    tp = own_group([[first, first + 1] for first in range(0, world, 2)], "tp", args.timeout)  # {0, 1}, {2, 3}, ...
    dp = own_group(
        [list(range(0, world, 2)), list(range(1, world, 2))], "dp", args.timeout
    )  # the even ranks, the odd ranks
    for step in range(1, args.total + 1):
        dist.all_reduce(tensor, group=tp)
        if rank == args.culprit and step == args.fault_at:
            time.sleep(args.timeout * 20)
        dist.all_reduce(tensor, group=dp)
        dist.all_reduce(tensor)


def first_collective(args, rank: int, tensor: torch.Tensor) -> None:
    for _ in range(3):
        dist.all_reduce(tensor)
    late = dist.new_group([1, 2, 3], timeout=datetime.timedelta(seconds=args.timeout), group_desc="late")
    if rank == 0:
        return  # not a member: nothing more to do
    if rank == args.culprit:
        time.sleep(args.timeout * 20)
    dist.all_reduce(tensor, group=late)


def snapshot(args, rank: int, tensor: torch.Tensor) -> None:
    evens = dist.new_group([0, 2], timeout=datetime.timedelta(seconds=args.timeout), group_desc="evens")
    for step in range(1, 10_000):
        time.sleep(0.05 + (0.3 if rank == 1 else 0.0))  # the step's compute: rank 1 is the slowest
        dist.all_reduce(tensor)
        if rank in (0, 2) and step % 5 == 0:
            dist.all_reduce(tensor, group=evens)
        if rank == 0:
            stamp = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3]
            print(f"{stamp}Z step {step} | loss {1 / step:.4f}", flush=True)


def four_groups(args, rank: int, world: int, tensor: torch.Tensor) -> None:
    # 8 ranks: rank = 4 * stage + 2 * data index + tensor index
    tp = own_group([[0, 1], [2, 3], [4, 5], [6, 7]], "tp", args.timeout)
    pp = own_group([[0, 4], [1, 5], [2, 6], [3, 7]], "pp", args.timeout)  # stage 0 first
    dp = own_group([[0, 2], [1, 3], [4, 6], [5, 7]], "dp", args.timeout)
    first_stage = rank % 4
    for step in range(1, args.total + 1):
        dist.all_reduce(tensor, group=tp)  # the layer's tensor-parallel reduction
        if rank == args.culprit and step == args.fault_at:
            time.sleep(args.timeout * 20)
        dist.broadcast(tensor, src=first_stage, group=pp)  # the activations handed to the next stage
        dist.all_reduce(tensor, group=dp)  # the gradients
        dist.all_reduce(tensor)  # the loss, for logging


if __name__ == "__main__":
    sys.exit(main())
