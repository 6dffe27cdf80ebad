"""One rank of a small Gloo job that leaves PyTorch Flight Recorder dumps (run by make_dumps.py under torchrun).

Every rank runs a few collectives on the CPU with the Gloo backend; in every case but `healthy` one rank (the culprit)
misbehaves before collective number `--fault-at` of the default process group:

    straggler      sleeps far past the collective timeout before entering it
    dead           kills itself with SIGKILL (no dump is left)
    wrong_op       calls broadcast where the others call all_reduce
    size_mismatch  calls all_reduce on a tensor of another size
    dtype_mismatch calls all_reduce on a tensor of another dtype

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
    parser.add_argument(
        "--case", required=True, choices=["healthy", "straggler", "dead", "wrong_op", "size_mismatch", "dtype_mismatch"]
    )
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


if __name__ == "__main__":
    sys.exit(main())
