"""Pipeline benchmark: ingest and analyse typical attempts with real Celery workers, PostgreSQL and Redis.

    python bench/pipeline.py [--attempts 1000] [--workers 1 2 1 2] [--keep]

Each attempt has 8 nodes and about 50,000 log lines (a syslog per node, a workload log of 64
ranks with NCCL INFO chatter and training progress) and one of a few typical faults. The bundles are
generated deterministically: a pool of distinct log sets, hard-linked into 1,000 bundles whose
attempt.json differ (job ids). Per run it measures:

- ingest: ``manage.py ingest --no-analyse`` semantics in this process (copy the bundle, write rows);
- analysis: N worker processes (``celery worker --pool=solo``) draining 1,000 queued analyses;
  attempts/s per worker process = attempts / wall time / N; and the same with the hand-off task each new
  diagnosis queues (they run behind the analyses), which an attempt also costs a worker;
- the database time share: time spent in database calls (Django's execute wrapper) over the time
  spent in analysis tasks, summed over the workers, and the statements per analysis (and per hand-off task);
- the engine alone on the same bundles in this one process (read the stored bundle, analyse; the first
  two copies of each distinct log set, the same mix as all the attempts), before and after the workers,
  and the ratio pipeline / engine per attempt (target <= 1.5 with one worker process); the same ratio
  in CPU time (the worker process's CPU in analysis tasks over the engine's), which a busy machine moves less;
  and the difference of the two per attempt: what the store and Celery add outside the engine;
- scaling: with runs of 1 and of 2 worker processes (``--workers 1 2``; repeat them, ``1 2 1 2``, on a shared
  machine), what the second process adds as a share of the first's attempts/s (best run of each; target >= 0.8);
- the leads (docs/leads.md): the time an analysis task spends mining the attempt's templates and recording them and
  its leads (``attempt_mine`` and the template store's writes), timed inside the same tasks: the task's time over its
  time without them is the slowdown they cause (target <= 1.10);
- a worker's memory: one worker analyses the attempts again and again (their diagnoses deleted between
  rounds) and reports its resident memory after 1,000 and after 10,000 analyses (``--memory``).

It needs PostgreSQL and Redis (``scripts/services.sh`` starts them) and uses its own database
(``faultline_bench``, recreated) and Redis database 5 (flushed); override with ``--database-url`` and
``--broker-url``. Results belong in docs/performance.md, section "Pipeline".
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parents[1]
NODES = 8
RANKS_PER_NODE = 8
SYSLOG_LINES = 2_000  # per node
WORKLOAD_LINES = 34_000  # the workload log, all ranks
POOL = 40  # distinct log sets
FAULTS = ("gpu_bus", "gpu_ecc", "ib_link", "host_oom", "cuda_oom", "none")
STATS_KEY = "faultline-bench"
ANALYSIS_TASK = "diagnoses.tasks.analyse_attempt"
PIPELINE_TARGET = 50  # attempts/s per worker process
RATIO_TARGET = 1.5  # pipeline / engine alone, per attempt
SCALING_TARGET = 0.8  # what a second worker process adds, as a share of the first's attempts/s
MEMORY_GROWTH_TARGET = 0.10
LEADS_TARGET = 1.10  # an analysis task's time over its time without the leads' mining and store
START = datetime(2026, 11, 2, 8, 0, tzinfo=UTC)


# Bundles -----------------------------------------------------------------------------------------


def write_log_set(root: Path, variant: int) -> dict:
    """One distinct set of logs (variant ``variant``) and the attempt fields that go with it."""
    rnd = random.Random(variant)
    fault = FAULTS[variant % len(FAULTS)]
    nodes = [f"gpu{(variant * NODES + k) % 997:03d}" for k in range(NODES)]
    start = START + timedelta(hours=variant)
    end = start + timedelta(minutes=45)
    faulty = rnd.randrange(NODES)
    fault_at = start + timedelta(minutes=20, seconds=rnd.randrange(600))
    (root / "logs").mkdir(parents=True)
    for index, node in enumerate(nodes):
        lines = []
        for j in range(SYSLOG_LINES):
            moment = start + timedelta(seconds=j * 2700 / SYSLOG_LINES)
            kind = j % 4
            if kind == 0:
                text = f"kernel: [{j * 1.35:.6f}] mlx5_core 0000:{j % 9:02x}:00.0: poll_health: CQE ok, port {j % 2}"
            elif kind == 1:
                text = f"systemd[1]: Started session-{rnd.randrange(10**5)}.scope - Session of user alice."
            elif kind == 2:
                text = f"slurmstepd[{4000 + index}]: task/cgroup: step {j} memory {rnd.randrange(10**6)} kB"
            else:
                text = f"nvidia-persistenced: device 0000:{3 + j % 8:02x}:00.0 - persistence mode enabled"
            lines.append(f"{moment:%b %e %H:%M:%S} {node} {text}")
            if index == faulty and j == SYSLOG_LINES // 2:
                lines.append(f"{fault_at:%b %e %H:%M:%S} {node} {fault_line(fault)}")
        (root / "logs" / node).mkdir()
        (root / "logs" / node / "syslog.log").write_text("\n".join(lines) + "\n")
    workload = []
    ranks = NODES * RANKS_PER_NODE
    for j in range(WORKLOAD_LINES):
        rank = j % ranks
        moment = start + timedelta(seconds=j * 2600 / WORKLOAD_LINES)
        if j % 3:
            workload.append(f"[rank{rank}]: {moment:%Y-%m-%d %H:%M:%S},{j % 1000:03d} INFO step {j // ranks} "
                            f"loss {2 + rnd.random():.4f} lr 3.0e-04 tokens/s {rnd.randrange(10**5)}")  # fmt: skip
        else:
            workload.append(f"[rank{rank}]: {node_of(nodes, rank)}:{4000 + rank}:{4100 + rank} [{rank % 8}] NCCL "
                            f"INFO Channel {j % 32:02d}/0 : {rank} -> {(rank + 1) % ranks} via P2P/IPC")  # fmt: skip
    if fault == "cuda_oom":
        workload.append(f"[rank{faulty * RANKS_PER_NODE}]: torch.OutOfMemoryError: CUDA out of memory. Tried to "
                        "allocate 2.00 GiB. GPU 0 has a total capacity of 79.15 GiB")  # fmt: skip
    if fault != "none":
        timeout = fault_at + timedelta(minutes=10)
        workload += [
            f"[rank{r}]: {timeout:%Y-%m-%d %H:%M:%S},000 [E ProcessGroupNCCL.cpp:616] [Rank {r}] Watchdog caught "
            f"collective operation timeout: WorkNCCL(SeqNum=771, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, "
            f"Timeout(ms)=600000) ran for 600031 milliseconds before timing out."
            for r in range(ranks)
        ]
    (root / "logs" / "train.log").write_text("\n".join(workload) + "\n")
    return {"nodes": nodes, "start": stamp(start), "end": stamp(end)}


def fault_line(fault: str) -> str:
    return {
        "gpu_bus": "kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', name=<unknown>, "
        "GPU has fallen off the bus.",
        "gpu_ecc": "kernel: NVRM: Xid (PCI:0000:3b:00): 48, pid=9911, name=python, An uncorrectable double bit "
        "error (DBE) has been detected on GPU in the framebuffer at partition 0, subpartition 0.",
        "ib_link": "kernel: mlx5_core 0000:0c:00.0 ens1f0: Link down",
        "host_oom": "kernel: Out of memory: Killed process 9911 (python) total-vm:812345678kB, anon-rss:501234567kB",
        "cuda_oom": "kernel: python[9911]: segfault at 0 ip 00007f sp 00007ff error 4",
        "none": "kernel: EDAC MC0: 1 CE memory read error on CPU_SrcID#0_Ha#0_Chan#0_DIMM#0",
    }[fault]


def node_of(nodes: list[str], rank: int) -> str:
    return nodes[rank // RANKS_PER_NODE]


def stamp(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def write_bundles(root: Path, count: int) -> list[Path]:
    """``count`` bundles: distinct attempt.json each, log files hard-linked from a pool of ``POOL`` log sets."""
    pool = root / "pool"
    fields = [write_log_set(pool / str(v), v) for v in range(min(POOL, count))]
    bundles = []
    for number in range(count):
        variant = number % len(fields)
        bundle = root / "bundles" / f"{number:05d}"
        shutil.copytree(pool / str(variant), bundle, copy_function=os.link)
        record = {"cluster": "bench", "scheduler": "slurm", "job_id": str(700000 + number), "attempt": 0,
                  "user": f"user{number % 17}", "name": "pretrain", "state": "FAILED", "exit_code": "1:0",
                  "tasks_per_node": RANKS_PER_NODE, **fields[variant]}  # fmt: skip
        (bundle / "attempt.json").write_text(json.dumps(record))
        bundles.append(bundle)
    return bundles


# The worker: a Celery worker that also counts time in tasks and in database calls -----------------


def resident_mb() -> float:
    """This process's resident memory now (not its peak), in MB."""
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / (1 << 20)


def run_worker(broker_url: str, checkpoints: list[int]) -> None:
    import django

    django.setup()
    import redis
    from celery.signals import task_postrun, task_prerun
    from django.db import connection

    from diagnoses.services import analysis
    from triage.celery import app

    stats = redis.Redis.from_url(broker_url)
    clock = {"db": 0.0, "task": 0.0, "cpu": 0.0, "analyses": 0, "statements": 0, "leads": 0.0, "leads_cpu": 0.0}

    def leads_timed(function):
        def timed_call(*args, **kwargs):
            began, cpu = time.perf_counter(), time.process_time()
            try:
                return function(*args, **kwargs)
            finally:
                clock["leads"] += time.perf_counter() - began
                clock["leads_cpu"] += time.process_time() - cpu

        return timed_call

    analysis.attempt_mine = leads_timed(analysis.attempt_mine)
    analysis._leads_record = leads_timed(analysis._leads_record)

    def timed(execute, sql, params, many, context):
        clock["statements"] += 1
        began = time.perf_counter()
        try:
            return execute(sql, params, many, context)
        finally:
            clock["db"] += time.perf_counter() - began

    @task_prerun.connect
    def started(**kwargs):
        clock["task"] = time.perf_counter()
        clock["cpu"] = time.process_time()
        clock["db"] = 0.0
        clock["leads"] = clock["leads_cpu"] = 0.0
        clock["statements"] = 0
        connection.execute_wrappers.append(timed)

    @task_postrun.connect
    def finished(task, **kwargs):
        connection.execute_wrappers.remove(timed)
        pipe = stats.pipeline()
        kind = "analysis" if task.name == ANALYSIS_TASK else "other"
        pipe.incr(f"{STATS_KEY}:{kind}:tasks")
        pipe.incrby(f"{STATS_KEY}:{kind}:statements", clock["statements"])
        pipe.incrbyfloat(f"{STATS_KEY}:{kind}:task", time.perf_counter() - clock["task"])
        pipe.incrbyfloat(f"{STATS_KEY}:{kind}:db", clock["db"])
        pipe.incrbyfloat(f"{STATS_KEY}:{kind}:cpu", time.process_time() - clock["cpu"])
        pipe.incrbyfloat(f"{STATS_KEY}:{kind}:leads", clock["leads"])
        pipe.incrbyfloat(f"{STATS_KEY}:{kind}:leads_cpu", clock["leads_cpu"])
        if task.name == ANALYSIS_TASK:  # the checkpoints count analyses, not the hand-off tasks each one queues
            clock["analyses"] += 1
            if clock["analyses"] in checkpoints:
                pipe.set(f"{STATS_KEY}:rss:{clock['analyses']}", resident_mb())
        pipe.execute()

    logging.getLogger("celery.app.trace").setLevel(logging.WARNING)  # settings log each task at INFO
    app.worker_main(["worker", "--pool=solo", "--loglevel=WARNING", "--without-gossip", "--without-mingle"])


# The run -----------------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--attempts", type=int, default=1000)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2], help="worker processes per run")
    parser.add_argument("--database-url", default="postgres://postgres@127.0.0.1:5432/faultline_bench")
    parser.add_argument("--broker-url", default="redis://127.0.0.1:6379/5")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument(
        "--memory", type=int, nargs=2, default=[1000, 10000], metavar=("FIRST", "THEN"),
        help="a worker's memory after FIRST and THEN analyses (0 0 skips it)",
    )  # fmt: skip
    parser.add_argument("--keep", action="store_true", help="keep the generated bundles and bundle store")
    args = parser.parse_args()

    workdir = Path(os.environ.get("FAULTLINE_BENCH_DIR") or tempfile.mkdtemp(prefix="faultline-bench-"))
    os.environ.update(
        FAULTLINE_BENCH_DIR=str(workdir),  # the workers (started with this environment) use the same store
        DJANGO_SETTINGS_MODULE="triage.settings",
        DATABASE_URL=args.database_url,
        CELERY_BROKER_URL=args.broker_url,
        FAULTLINE_BUNDLE_ROOT=str(workdir / "store"),
        FAULTLINE_VAR_DIR=str(workdir / "var"),
        FAULTLINE_LOG_LEVEL="WARNING",
    )
    sys.path.insert(0, str(BASE_DIR))
    if args.worker:
        run_worker(args.broker_url, args.memory)
        return
    try:
        bench(args, workdir)
    finally:
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)


def bench(args, workdir: Path) -> None:
    began = time.perf_counter()
    sources = write_bundles(workdir / "generated", args.attempts)
    lines = sum(f.read_bytes().count(b"\n") for f in sources[0].rglob("*.log"))
    print(
        f"generated {len(sources)} bundles ({lines:,} lines, {NODES} nodes each) in {time.perf_counter() - began:.0f} s"
    )
    rates = {}
    for workers in args.workers:
        rates.setdefault(workers, []).append(run(args, workdir, sources, workers))
    if 1 in rates and 2 in rates:  # the store must not serialise the workers: the second adds >= 0.8 of the first
        one, two = max(rates[1]), max(rates[2])
        print(f"\nscaling: 2 worker processes {two:.1f} attempts/s, 1 worker process {one:.1f} (best runs): "
              f"the second adds {(two - one) / one:.2f} of the first's (target >= {SCALING_TARGET})")  # fmt: skip
    if args.memory[1]:
        memory(args, workdir, sources)
    print(f"\nload average at the end (1, 5, 15 min): {' '.join(f'{v:.1f}' for v in os.getloadavg())}")


def fresh_store(args, workdir: Path, sources: list[Path]) -> float:
    """A new database and bundle store with ``sources`` ingested, Redis flushed; the ingest time."""
    import django

    django.setup()
    from django.db import connections

    connections.close_all()  # the database is dropped and made anew
    database = args.database_url.rsplit("/", 1)[1]
    admin_url = args.database_url.rsplit("/", 1)[0] + "/postgres"
    subprocess.run(["psql", admin_url, "-qc", f"DROP DATABASE IF EXISTS {database}"], check=True)
    subprocess.run(["psql", admin_url, "-qc", f"CREATE DATABASE {database}"], check=True)
    shutil.rmtree(workdir / "store", ignore_errors=True)
    manage = [sys.executable, str(BASE_DIR / "manage.py")]
    subprocess.run([*manage, "migrate", "-v0"], check=True, cwd=BASE_DIR)

    import redis

    from diagnoses.services import attempts
    from rules.services import active_revision

    redis.Redis.from_url(args.broker_url).flushdb()
    active_revision()

    began = time.perf_counter()
    for source in sources:
        attempts.attempt_ingest_directory(path=source, analyse=False)
    return time.perf_counter() - began


def start_workers(args, count: int) -> list[subprocess.Popen]:
    command = [sys.executable, __file__, "--worker", "--database-url", args.database_url,
               "--broker-url", args.broker_url, "--memory", *map(str, args.memory)]  # fmt: skip
    processes = [subprocess.Popen(command, cwd=BASE_DIR) for _ in range(count)]
    time.sleep(3)  # let the workers start and compile the rule set before the clock starts
    return processes


def stop_workers(processes: list[subprocess.Popen]) -> None:
    for process in processes:
        process.terminate()
    for process in processes:
        process.wait()


def analyse_all() -> tuple[float, float]:
    """Queue every attempt's analysis and wait until none is left, then until the hand-off tasks that the new
    diagnoses queued (behind the analyses: the queue is first in, first out) have run; the two wall times."""
    from diagnoses.models import Attempt
    from diagnoses.services import attempts
    from handoffs.models import PendingHandoff

    began = time.perf_counter()
    attempts.attempts_reanalyse(attempts=Attempt.objects.all())
    while Attempt.objects.exclude(analysis_state__in=["analysed", "failed"]).exists():
        time.sleep(0.05)
    analysed = time.perf_counter() - began
    while PendingHandoff.objects.exists():
        time.sleep(0.05)
    return analysed, time.perf_counter() - began


def engine_alone() -> tuple[float, float, int]:
    """Seconds per attempt, wall and CPU, of the engine alone in this process (read the stored bundle,
    analyse) over the first two copies of each distinct log set: the same mix as all the attempts."""
    from diagnoses import selectors
    from diagnoses.models import Attempt
    from rules.engine_limits import bundle_limits
    from rules.selectors import revision_engine
    from rules.services import active_revision

    engine = revision_engine(active_revision())
    sample = list(Attempt.objects.select_related("cluster", "job").order_by("pk")[: 2 * POOL])
    with selectors.attempt_context(sample[0]) as context:  # warm, as the workers are
        engine.analyse(context, limits=bundle_limits())
    began, cpu = time.perf_counter(), time.process_time()
    for attempt in sample:
        with selectors.attempt_context(attempt) as context:
            engine.analyse(context, limits=bundle_limits())
    return (time.perf_counter() - began) / len(sample), (time.process_time() - cpu) / len(sample), len(sample)


def run(args, workdir: Path, sources: list[Path], workers: int) -> float:
    """One run with ``workers`` worker processes: prints its figures, returns its analyses per second."""
    ingest = fresh_store(args, workdir, sources)
    before = engine_alone()  # before and after the workers, so that both see the machine as they did
    processes = start_workers(args, workers)
    try:
        analysis, handed_off = analyse_all()
    finally:
        stop_workers(processes)
    after = engine_alone()
    engine_s, engine_cpu, sampled = ((b + a) / 2 for b, a in zip(before, after, strict=True))

    import redis

    from diagnoses.models import Attempt

    stats = redis.Redis.from_url(args.broker_url)
    task_time = float(stats.get(f"{STATS_KEY}:analysis:task") or 0)  # the analyses' alone
    db_time = float(stats.get(f"{STATS_KEY}:analysis:db") or 0)
    task_cpu = float(stats.get(f"{STATS_KEY}:analysis:cpu") or 0)
    leads_time = float(stats.get(f"{STATS_KEY}:analysis:leads") or 0)
    leads_cpu = float(stats.get(f"{STATS_KEY}:analysis:leads_cpu") or 0)
    outcomes = {}
    for outcome in Attempt.objects.values_list("current_diagnosis__subdomain", flat=True):
        outcomes[outcome or "-"] = outcomes.get(outcome or "-", 0) + 1
    failed = Attempt.objects.filter(analysis_state="failed")
    reasons = sorted(set(failed.values_list("analysis_error", flat=True)))[:3]
    count = len(sources)
    per_worker = count / analysis / workers
    pipeline_s = 1 / per_worker  # one attempt's time in one worker process
    target = f"(target >= {PIPELINE_TARGET})" if workers == 1 else "(the target is for one worker)"
    print(f"\n{workers} worker process(es), {count} attempts, load average {os.getloadavg()[0]:.1f}")
    print(f"  ingest (1 process):   {count / ingest:7.1f} attempts/s ({ingest:.1f} s)")
    print(f"  analysis:             {count / analysis:7.1f} attempts/s ({analysis:.1f} s), "
          f"{per_worker:.1f} attempts/s per worker process {target}")  # fmt: skip
    print(f"  with the hand-offs:   {count / handed_off / workers:7.1f} attempts/s per worker process (each new "
          f"diagnosis's hand-off task included, {handed_off:.1f} s)")  # fmt: skip
    print(f"  time in analyses:     {task_time / count * 1000:7.1f} ms per attempt, "
          f"of which database {db_time / task_time:.0%}" if task_time else "  no task statistics")  # fmt: skip
    print(f"  engine alone:         {engine_s * 1000:7.1f} ms per attempt, {engine_cpu * 1000:.1f} ms CPU "
          f"(1 process, {sampled:.0f} of the same bundles, before and after the workers)")  # fmt: skip
    print(f"  worker CPU / engine CPU: {task_cpu / count / engine_cpu:5.2f} per attempt "
          f"({task_cpu / count * 1000:.1f} / {engine_cpu * 1000:.1f} ms: what the worker process adds, "
          "PostgreSQL's and Redis's work left out)")  # fmt: skip
    print(f"  pipeline / engine:    {pipeline_s / engine_s:7.2f} per attempt "
          f"({pipeline_s * 1000:.1f} / {engine_s * 1000:.1f} ms; target <= {RATIO_TARGET}, one worker)")  # fmt: skip
    print(f"  outside the engine:   {(pipeline_s - engine_s) * 1000:7.1f} ms per attempt (pipeline - engine), "
          f"{(task_cpu / count - engine_cpu) * 1000:.1f} ms CPU (worker - engine)")  # fmt: skip
    print(f"  statements:           {per_task(stats, 'analysis', 'statements'):7.1f} per analysis, "
          f"{per_task(stats, 'other', 'statements'):.1f} per other task (the hand-offs'; BEGIN and COMMIT not "
          f"counted); time in an analysis task {per_task(stats, 'analysis', 'task') * 1000:.1f} ms, in another "
          f"{per_task(stats, 'other', 'task') * 1000:.1f} ms")  # fmt: skip
    if task_time:
        print(f"  leads:                {leads_time / count * 1000:7.1f} ms per analysis task (mining and the template "
              f"store); the task {task_time / count * 1000:.1f} ms, without them "
              f"{(task_time - leads_time) / count * 1000:.1f} ms: slowdown {task_time / (task_time - leads_time):.3f} "
              f"(target <= {LEADS_TARGET}); in CPU {leads_cpu / count * 1000:.1f} of {task_cpu / count * 1000:.1f} ms: "
              f"{task_cpu / (task_cpu - leads_cpu):.3f}")  # fmt: skip
    print(f"  failed: {failed.count()} {reasons}; subdomains: {dict(sorted(outcomes.items()))}")
    return count / analysis


def per_task(stats, kind: str, figure: str) -> float:
    """The workers' ``figure`` (``statements`` or ``task``: seconds) per task of ``kind`` (``analysis`` or
    ``other``)."""
    tasks = int(stats.get(f"{STATS_KEY}:{kind}:tasks") or 0)
    return float(stats.get(f"{STATS_KEY}:{kind}:{figure}") or 0) / tasks if tasks else float("nan")


def memory(args, workdir: Path, sources: list[Path]) -> None:
    """One worker analyses the attempts round after round (their diagnoses deleted in between) until it has
    done ``args.memory[1]`` analyses; it reports its resident memory at each checkpoint."""
    import redis

    from diagnoses.models import Diagnosis

    fresh_store(args, workdir, sources)
    first, then = args.memory
    processes = start_workers(args, 1)
    began = time.perf_counter()
    try:
        for _ in range(-(-then // len(sources))):
            Diagnosis.objects.all().delete()
            analyse_all()
    finally:
        stop_workers(processes)
    stats = redis.Redis.from_url(args.broker_url)
    rss = {n: float(stats.get(f"{STATS_KEY}:rss:{n}") or 0) for n in (first, then)}
    growth = rss[then] / rss[first] - 1 if rss[first] else float("nan")
    print(f"\nworker memory ({then:,} analyses in {time.perf_counter() - began:.0f} s, "
          f"load average {os.getloadavg()[0]:.1f})")  # fmt: skip
    print(f"  resident after {first:,}: {rss[first]:.1f} MB; after {then:,}: {rss[then]:.1f} MB; "
          f"growth {growth:+.1%} (target within {MEMORY_GROWTH_TARGET:.0%})")  # fmt: skip


if __name__ == "__main__":
    main()
