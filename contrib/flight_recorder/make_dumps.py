"""Run the Flight Recorder cases of fr_job.py with torchrun and keep their dumps (see README.md beside this file).

    python3 contrib/flight_recorder/make_dumps.py --torchrun /work/torchenv/bin/torchrun \
        --out engine/flight_recorder/tests/dumps

Each case lands in `<out>/<case>/`: the pickles PyTorch writes (`rank_<N>`), for the cases in JSON_CASES the JSON
dumps of the same moment in `<out>/<case>/json/rank_<N>`, and `MADE_BY.json` with the torch version, the command,
torchrun's exit code and the ranks that left no dump. A case whose culprit leaves a dump when it should not (or the
reverse), or that loses more than one other dump, fails the script.
"""

import argparse
import datetime
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

JOB = Path(__file__).with_name("fr_job.py")
TIMEOUT_S = 5
# case: (ranks, culprit, whether the culprit leaves a dump). Other ranks may crash without one too: in dtype_mismatch
# Gloo aborts the rank that receives the wider data ("Received data size doesn't match expected size").
CASES = {
    "healthy": (4, None, True),
    "straggler": (4, 2, True),
    "dead": (8, 5, False),
    "wrong_op": (4, 3, True),
    "size_mismatch": (4, 1, True),
    "dtype_mismatch": (4, 2, True),
    "cross_group": (8, 5, True),
    "first_collective": (4, 3, True),
    "snapshot": (4, None, True),
    "four_groups": (8, 6, True),
}
JSON_CASES = {"healthy", "straggler"}
NEW_CASES = {"cross_group", "first_collective", "snapshot", "four_groups"}  # torch 2.14.1; the others 2.13.0
# The snapshot case is cancelled, as a scheduler does (SIGTERM to torchrun), once the job has printed this step's
# progress line; its collectives have a 60 s timeout.
CANCEL_AT_STEP = 12
TIMEOUTS_S = {"snapshot": 60}
PREFIX = "rank_"
LOG = "torchrun.log"  # what torchrun printed, every rank's lines prefixed [default<local rank>]: (--tee 3)


def torch_version(torchrun: str) -> str:
    python = Path(shutil.which(torchrun) or torchrun).with_name("python")
    code = "import torch; print(torch.__version__)"
    return subprocess.run([str(python), "-c", code], capture_output=True, text=True, check=True).stdout.strip()


def run_case(torchrun: str, case: str, out: Path, version: str, port: int) -> None:
    ranks, culprit, culprit_dumps = CASES[case]
    target = out / case
    with tempfile.TemporaryDirectory() as scratch:
        pickles, jsons = Path(scratch, "pickle"), Path(scratch, "json")
        pickles.mkdir()
        jsons.mkdir()
        env = dict(os.environ, TORCH_FR_BUFFER_SIZE="64", TORCH_FR_DUMP_TEMP_FILE=f"{pickles}/{PREFIX}")
        if case in JSON_CASES:
            env["FAULTLINE_FR_JSON_PREFIX"] = f"{jsons}/{PREFIX}"
        job_args = ["--case", case, "--timeout", str(TIMEOUTS_S.get(case, TIMEOUT_S))]
        if culprit is not None:
            job_args += ["--culprit", str(culprit)]
        command = [
            torchrun,
            "--nproc_per_node",
            str(ranks),
            "--master_port",
            str(port),
            "--monitor-interval",
            "10",
            "--tee",
            "3",
            str(JOB),
            *job_args,
        ]
        started_at = _now()
        done, cancelled_at = run(command, env, cancel=case == "snapshot")
        ended_at = _now()
        made = sorted(int(p.name.removeprefix(PREFIX)) for p in pickles.iterdir())
        if culprit is not None and (culprit in made) != culprit_dumps or len(made) < ranks - 2:
            sys.stderr.write(done.stdout[-4000:])
            raise SystemExit(f"{case}: unexpected dumps from ranks {made}")
        if target.exists():
            shutil.rmtree(target)
        shutil.copytree(pickles, target)
        if case in JSON_CASES:
            shutil.copytree(jsons, target / "json")
        (target / LOG).write_text(done.stdout)
    shown = shlex.join(
        ["TORCH_FR_BUFFER_SIZE=64", f"TORCH_FR_DUMP_TEMP_FILE=<dir>/{PREFIX}"]
        + ([f"FAULTLINE_FR_JSON_PREFIX=<dir>/json/{PREFIX}"] if case in JSON_CASES else [])
        + ["torchrun", *command[1 : -len(job_args) - 1], "contrib/flight_recorder/fr_job.py", *job_args]
    )
    made_by = {
        "torch": version,
        "backend": "gloo",
        "case": case,
        "ranks": ranks,
        "culprit": culprit,
        "command": shown,
        "torchrun_exit_code": done.returncode,
        "ranks_without_dump": [rank for rank in range(ranks) if rank not in made],
    }
    if case in NEW_CASES:  # the job's window, as a scheduler records it (the earlier cases' runs kept none)
        made_by.update(started_at=started_at, ended_at=ended_at)
    if cancelled_at is not None:
        made_by["cancelled_at"] = cancelled_at
    (target / "MADE_BY.json").write_text(json.dumps(made_by, indent=2, sort_keys=True) + "\n")
    print(f"{case}: {len(made)} dumps, torchrun exit {done.returncode}")


def run(command: list[str], env: dict, *, cancel: bool) -> tuple[subprocess.CompletedProcess, str | None]:
    """torchrun's run, its output and, when `cancel`, when it was sent SIGTERM."""
    if not cancel:
        done = subprocess.run(
            command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300
        )
        return done, None
    with tempfile.NamedTemporaryFile("w+") as output:
        process = subprocess.Popen(command, env=env, stdout=output, stderr=subprocess.STDOUT, text=True)
        deadline = time.monotonic() + 240
        while f" step {CANCEL_AT_STEP} |" not in Path(output.name).read_text() and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(0.25)  # a moment into the next step
        cancelled_at = _now()
        process.send_signal(signal.SIGTERM)
        returncode = process.wait(timeout=300)
        output.seek(0)
        return subprocess.CompletedProcess(command, returncode, output.read()), cancelled_at


def _now() -> str:
    """UTC, RFC 3339 to the millisecond."""
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--torchrun", default="torchrun", help="torchrun of a virtualenv with torch installed")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--case", action="append", choices=sorted(CASES), help="only these cases (repeatable)")
    args = parser.parse_args()
    version = torch_version(args.torchrun)
    args.out.mkdir(parents=True, exist_ok=True)
    for index, case in enumerate(args.case or CASES):
        run_case(args.torchrun, case, args.out, version, 29600 + index)


if __name__ == "__main__":
    main()
