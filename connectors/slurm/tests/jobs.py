"""Real Slurm jobs for the tests (the single-node cluster of scripts/slurm.sh; the root conftest's ``slurm``
fixture starts it and hands these out): job scripts that fail the ways a training job fails, and
``run``/``wait_for`` around the Slurm commands."""

from __future__ import annotations

import subprocess
import time

NCCL_ERROR = "../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1269, unhandled system error, NCCL version 2.14.3"
FAIL_JOB = f"""#!/bin/bash
echo "[rank0] step 100 loss=2.31"
echo "$(hostname -s):1234:5678 [0] NCCL INFO comm 0x55d5 rank 0 nranks 8 cudaDev 0 busId 1b000 - Init COMPLETE"
echo "$(hostname -s):1234:5678 [3] misc/socket.cc:538 NCCL WARN Net : Connection closed by remote peer node02<41234>"
echo "RuntimeError: NCCL error in: {NCCL_ERROR}"
echo "ncclSystemError: System call (e.g. socket, malloc) or external library call failed or device error." >&2
exit 1
"""
SLEEP_JOB = "#!/bin/bash\necho start\nsleep 600\n"


def run(*args: str) -> str:
    return subprocess.run(args, check=True, capture_output=True, text=True, timeout=60).stdout.strip()


def job_state(job_id: str) -> str:
    record = run("scontrol", "-o", "show", "job", job_id)
    return record.split(" JobState=", 1)[1].split(" ", 1)[0]


def wait_for(job_ids: list[str], states: set[str], limit: float) -> None:
    deadline = time.monotonic() + limit
    while True:
        current = {job: job_state(job) for job in job_ids}
        if all(state in states for state in current.values()):
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"jobs did not reach {sorted(states)} within {limit:g} s: {current}")
        time.sleep(1)


def node_state(node: str) -> str:
    return run("sinfo", "-h", "-n", node, "-o", "%T")


def hang_job(dumps: str, shared: str, output: str) -> str:
    """A job that leaves Flight Recorder dumps in ``shared/<job id>/<node>/`` (copied from ``dumps``, as PyTorch
    writes ``$TORCH_FR_DUMP_TEMP_FILE<rank>`` there) and prints ``output`` (what torchrun printed), then fails."""
    return f"""#!/bin/bash
folder="{shared}/$SLURM_JOB_ID/$(hostname -s)"
mkdir -p "$folder"
cp {dumps}/rank_* "$folder/"
cat {output}
exit 1
"""
