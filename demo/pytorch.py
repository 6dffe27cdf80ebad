"""The texts PyTorch, NCCL and torchrun print, in the wordings of recent releases (2.4-2.6, NCCL 2.21).

Pure functions from facts (rank, sequence number, error) to lines; ``demo.training`` places them on
ranks and in time.
"""

from __future__ import annotations

TORCH_LIB = "/usr/local/lib/python3.10/dist-packages/torch/lib"
TORCH_SRC = "/opt/pytorch/pytorch/torch/csrc/distributed/c10d"
PG = "[PG ID 0 PG GUID 0(default_pg) Rank {rank}]"
DOCS = "https://pytorch.org/docs/stable/elastic/errors.html"


def work(seq: int, op: str, numel: int) -> str:
    return f"WorkNCCL(SeqNum={seq}, OpType={op}, NumelIn={numel}, NumelOut={numel}, Timeout(ms)=600000)"


def watchdog_caught(rank: int, seq: int, op: str, numel: int, ran_ms: int) -> str:
    return (
        f"[Rank {rank}] Watchdog caught collective operation timeout: {work(seq, op, numel)} ran for {ran_ms} "
        "milliseconds before timing out."
    )


def frames(addresses: list[int], entry: str) -> list[str]:
    """A C++ exception's backtrace as c10 prints it; ``entry`` names the frame that raised."""
    names = [
        ("c10::Error::Error(c10::SourceLocation, std::string) + 0x96", "libc10.so"),
        (entry, "libtorch_cuda.so"),
        ("c10d::ProcessGroupNCCL::watchdogHandler() + 0x233", "libtorch_cuda.so"),
        ("c10d::ProcessGroupNCCL::ncclCommWatchdog() + 0x14d", "libtorch_cuda.so"),
    ]
    lines = [
        f"frame #{i}: {name} (0x{address:x} in {TORCH_LIB}/{lib})"
        for i, ((name, lib), address) in enumerate(zip(names, addresses, strict=False))
    ]
    lines.append(
        f"frame #{len(lines)}: <unknown function> + 0xdc253 (0x{addresses[-1] + 0x4A1E3:x} in "
        "/lib/x86_64-linux-gnu/libstdc++.so.6)"
    )
    lines.append(
        f"frame #{len(lines)}: <unknown function> + 0x94ac3 (0x{addresses[-1] + 0xC2F1A:x} in "
        "/lib/x86_64-linux-gnu/libc.so.6)"
    )
    return lines


def cuda_error_notes() -> list[str]:
    return [
        "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might "
        "be incorrect.",
        "For debugging consider passing CUDA_LAUNCH_BLOCKING=1",
        "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.",
        "",
    ]


def cuda_oom(local: int, total: float, tried: float, free: float) -> str:
    in_use = total - free
    allocated = in_use * 0.94
    reserved = in_use - allocated - 0.6
    return (
        f"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate {tried:.2f} GiB. GPU {local} has a total "
        f"capacity of {total:.2f} GiB of which {free:.2f} GiB is free. Including non-PyTorch memory, this process has "
        f"{in_use:.2f} GiB memory in use. Of the allocated memory {allocated:.2f} GiB is allocated by PyTorch, and "
        f"{reserved:.2f} GiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try "
        "setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation for "
        "Memory Management  (https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)"
    )


def torchrun_banner() -> list[str]:
    return [
        "*****************************************",
        "Setting OMP_NUM_THREADS environment variable for each process to be 1 in default, to avoid your system being "
        "overloaded, please further tune the variable for optimal performance in your application as needed. ",
        "*****************************************",
    ]


def torchrun_traceback(python: str, raising: str) -> list[str]:
    """The agent's own traceback when its workers failed (ChildFailedError) or it was signalled."""
    site = f"/usr/local/lib/{python}/dist-packages/torch/distributed"
    lines = [
        "Traceback (most recent call last):",
        '  File "/usr/local/bin/torchrun", line 33, in <module>',
        "    sys.exit(load_entry_point('torch', 'console_scripts', 'torchrun')())",
        f'  File "{site}/elastic/multiprocessing/errors/__init__.py", line 355, in wrapper',
        "    return f(*args, **kwargs)",
        f'  File "{site}/run.py", line 919, in main',
        "    run(args)",
        f'  File "{site}/run.py", line 910, in run',
        "    elastic_launch(",
        f'  File "{site}/launcher/api.py", line 138, in __call__',
        "    return launch_agent(self._config, self._entrypoint, list(args))",
    ]
    if raising == "ChildFailedError":
        lines += [f'  File "{site}/launcher/api.py", line 269, in launch_agent', "    raise ChildFailedError("]
    else:
        lines += [
            f'  File "{site}/launcher/api.py", line 260, in launch_agent',
            "    result = agent.run()",
            f'  File "{site}/elastic/multiprocessing/api.py", line 84, in _terminate_process_handler',
            '    raise SignalException(f"Process {os.getpid()} got signal: {sigval}", sigval=sigval)',
        ]
    return lines


def failure_entry(index: int, when: str, host: str, rank: int, local: int, code: int, pid: int) -> list[str]:
    """One entry of torchrun's failure report."""
    if code < 0:
        signal = {6: "SIGABRT", 9: "SIGKILL", 15: "SIGTERM"}[-code]
        traceback = f"Signal {-code} ({signal}) received by PID {pid}"
    else:
        traceback = f"To enable traceback see: {DOCS}"
    return [
        f"[{index}]:",
        f"  time      : {when}",
        f"  host      : {host}",
        f"  rank      : {rank} (local_rank: {local})",
        f"  exitcode  : {code} (pid: {pid})",
        "  error_file: <N/A>",
        f"  traceback : {traceback}",
    ]


def failure_report(script: str, root: list[str], others: list[list[str]]) -> list[str]:
    rule = "=" * 60
    lines = [
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
        rule,
        f"{script} FAILED",
        "-" * 60,
        "Failures:",
    ]
    if others:
        for entry in others:
            lines += entry
    else:
        lines.append("  <NO_OTHER_FAILURES>")
    lines += ["-" * 60, "Root Cause (first observed failure):", *root, rule]
    return lines
