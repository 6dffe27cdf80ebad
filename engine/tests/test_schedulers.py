"""The scheduler's own words: PBS/Torque, LSF, SkyPilot managed jobs and Kubernetes Jobs and JobSets, read from
the text they print (job mail, job reports, controller logs, events), give the verdict a bundle's record may lack.

Each bundle's attempt record says only FAILED: the verdict comes from the scheduler's text (rules/packs/default/
pbs.yaml, lsf.yaml, skypilot.yaml, kubernetes-jobs.yaml; the messages are catalogued in rules/catalog/).
"""

from datetime import timedelta

from engine.tests.bundles import START, diagnose_bundle, gpu_off_the_bus, write_bundle

NODES = ["node01", "node02", "node03", "node04"]
WATCHDOG = (
    "[rank{rank}]:[E1102 10:{minute}:00.000000000 ProcessGroupNCCL.cpp:616] [Rank {rank}] Watchdog caught collective "
    "operation timeout: WorkNCCL(SeqNum=3106, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for "
    "600077 milliseconds before timing out."
)


def watchdogs(minute: int, ranks=range(0, 32, 8)) -> list[str]:
    return [WATCHDOG.format(rank=rank, minute=minute) for rank in ranks]


def classification(result: dict) -> tuple:
    return result["outcome"], result["domain"], result["subdomain"]


# -- PBS and Torque ---------------------------------------------------------------------------------------------

PBS_MAIL = [
    "PBS Job Id: 1234.pbs-head",
    "Job Name:   llama-pretrain",
    "Aborted by PBS Server ",
    "Job exceeded resource walltime",
    "See job standard error file",
]


def test_a_pbs_walltime_kill_in_the_job_mail_and_stderr_is_the_jobs_time_limit(tmp_path):
    stderr = [
        "[2026-11-02 09:00:05,000] INFO starting training",
        "=>> PBS: job killed: walltime 5430 exceeded limit 5400",
    ]
    bundle = write_bundle(
        tmp_path, logs={"llama-pretrain-1234.err": stderr, "pbs-mail.log": PBS_MAIL}, scheduler="static", job_id="1234"
    )
    result = diagnose_bundle(bundle)
    assert classification(result) == ("attributed", "scheduler", "time_limit")
    assert result["root_cause"]["rule"] == "pbs.walltime"
    assert result["root_cause"]["nodes"] == []  # a verdict on the whole job, never on a node


def test_progress_that_stopped_long_before_the_pbs_walltime_kill_is_a_hang(tmp_path):
    progress = [
        f" [2026-11-02 09:{minute:02d}:00] iteration {minute * 2:8d}/{100000:8d} |"
        f" consumed samples: {minute * 128:12d} | elapsed time per iteration (ms): 30000.0 | lm loss: 2.345E+00 |"
        for minute in range(40)
    ]
    logs = {"llama-pretrain-1234.out": [*progress, "=>> PBS: job killed: walltime 10830 exceeded limit 10800"]}
    bundle = write_bundle(tmp_path, logs=logs, scheduler="static", job_id="1234", end="2026-11-02T12:00:00Z")
    result = diagnose_bundle(bundle)
    assert classification(result) == ("attributed", "software", "framework")
    assert result["root_cause"]["rule"] == "hang.stalled"  # the kill is the scheduler stopping the job (job.stopped)
    assert "pbs.walltime" in {s["rule"] for s in result["symptoms"]}


def test_a_shared_mom_log_never_lends_another_jobs_walltime_kill(tmp_path):
    def diagnose_mom_log(name: str, job: str) -> dict:
        mom = [f"11/02/2026 10:14:00;0008;pbs_mom;Job;{job}.pbs-head;walltime 3630 exceeded limit 3600"]
        return diagnose_bundle(
            write_bundle(tmp_path / name, logs={"mom_logs.log": mom}, scheduler="static", job_id="1234")
        )

    assert diagnose_mom_log("other", "999")["outcome"] == "unattributed"
    assert classification(diagnose_mom_log("own", "1234")) == ("attributed", "scheduler", "time_limit")


def test_moms_lost_sister_in_its_log_names_the_node(tmp_path):
    mom = ["11/02/2026 10:14:07;0008;pbs_mom;Job;1234.pbs-head;node EOF 1 (node03)"]
    logs = {"mom_logs.log": mom, "train.log": watchdogs(20)}
    result = diagnose_bundle(write_bundle(tmp_path, logs=logs, scheduler="static", job_id="1234"))
    assert classification(result) == ("attributed", "infrastructure", "node_lost")
    assert (result["root_cause"]["rule"], result["root_cause"]["nodes"]) == ("pbs.node_down", ["node03"])


def test_torques_kill_for_a_lost_sister_names_the_node_and_explains_the_timeouts(tmp_path):
    stderr = [
        "=>> PBS: job killed: node 2 (node03) requested job terminate, 'EOF' (code 1099) - received SISTER_EOF "
        "attempting to communicate with sister MOM's",
    ]
    logs = {"llama-pretrain-1234.err": stderr, "train.log": watchdogs(20)}
    result = diagnose_bundle(write_bundle(tmp_path, logs=logs, scheduler="static", job_id="1234"))
    assert classification(result) == ("attributed", "infrastructure", "node_lost")
    assert result["root_cause"]["nodes"] == ["node03"]


# -- Slurm's controller -----------------------------------------------------------------------------------------


def test_a_requeued_attempt_that_slurmctld_preempted_is_a_preemption_and_another_jobs_is_not(tmp_path):
    def diagnose_ctld(name: str, job: str) -> dict:
        ctld = [f"[2026-11-02T10:14:07.123] preempted JobId={job} has been requeued"]
        bundle = write_bundle(tmp_path / name, logs={"slurmctld.log": ctld}, state="REQUEUED", exit_code="0:0")
        return diagnose_bundle(bundle)

    result = diagnose_ctld("own", "48213")
    assert classification(result) == ("attributed", "scheduler", "preemption")
    assert (result["root_cause"]["rule"], result["root_cause"]["nodes"]) == ("slurmctld.preempted", [])
    assert diagnose_ctld("other", "48299")["outcome"] == "unattributed"


# -- LSF --------------------------------------------------------------------------------------------------------


def job_report(*status: str) -> list[str]:
    """LSF's job report as it ends the job's output file (bsub -o)."""
    return [
        "Sender: LSF System <lsfadmin@node01>",
        "Subject: Job 1234: <llama-pretrain> in cluster <cluster1> Exited",
        "",
        "Job <llama-pretrain> was submitted from host <login01> by user <alice> in cluster <cluster1>.",
        "Job was executed on host(s) <8*node01>, in queue <gpu>, as user <alice> in cluster <cluster1>.",
        "------------------------------------------------------------",
        "",
        *status,
        "",
        "Resource usage summary:",
        "    CPU time :                                   81868.00 sec.",
    ]


def test_an_lsf_run_limit_in_the_job_report_is_the_jobs_time_limit(tmp_path):
    report = job_report("TERM_RUNLIMIT: job killed after reaching LSF run time limit.", "Exited with exit code 140.")
    bundle = write_bundle(tmp_path, logs={"lsf-1234.out": report}, scheduler="static", job_id="1234")
    result = diagnose_bundle(bundle)
    assert classification(result) == ("attributed", "scheduler", "time_limit")
    assert (result["root_cause"]["rule"], result["root_cause"]["nodes"]) == ("lsf.run_limit", [])
    assert {s["rule"]: s["role"] for s in result["symptoms"]}["lsf.job_exit"] == "teardown"


def test_an_lsf_host_mbatchd_lost_is_the_node_that_failed(tmp_path):
    logs = {
        "mbatchd.log": ["Nov  2 10:14:07 2026 12345 6 1.0 pollSbatchds: The sbatchd on host node03 is unavailable"],
        "lsf-1234.out": [*watchdogs(20), *job_report("TERM_REMOVE_HUNG_JOB: job removed from LSF.")],
    }
    result = diagnose_bundle(write_bundle(tmp_path, logs=logs, scheduler="static", job_id="1234"))
    assert classification(result) == ("attributed", "infrastructure", "node_lost")
    assert (result["root_cause"]["rule"], result["root_cause"]["nodes"]) == ("lsf.host_lost", ["node03"])
    assert "nccl.watchdog_timeout" in {s["rule"] for s in result["symptoms"] if s["role"] == "cascade"}


# -- SkyPilot managed jobs --------------------------------------------------------------------------------------

CONTROLLER = [
    "I 11-02 09:00:05 controller.py:180] Submitted managed job 7 (task: 0, name: 'llama-pretrain')",
    "I 11-02 10:14:37 controller.py:251] Cluster is preempted or failed (status: INIT). Recovering...",
    "I 11-02 10:14:37 state.py:301] === Recovering... ===",
]


def test_a_skypilot_cluster_preempted_or_failed_is_a_preemption_or_a_lost_node(tmp_path):
    logs = {"sky-controller.log": CONTROLLER, "train.log": watchdogs(24)}
    result = diagnose_bundle(write_bundle(tmp_path, logs=logs, scheduler="static", job_id="7"))
    assert (result["outcome"], result["domain"]) == ("ambiguous", "ambiguous")  # SkyPilot cannot tell them apart
    assert {(c["domain"], c["subdomain"]) for c in result["candidates"]} == {
        ("scheduler", "preemption"),
        ("infrastructure", "node_lost"),
    }
    assert all(c["nodes"] == [] for c in result["candidates"])
    assert "nccl.watchdog_timeout" in {s["rule"] for s in result["symptoms"]}


def test_a_skypilot_job_that_found_no_resources_after_a_preemption_is_the_preemptions(tmp_path):
    queue = ["ID  TASK  NAME  REQUESTED  SUBMITTED  TOT. DURATION  JOB DURATION  #RECOVERIES  STATUS",
             "7   -     llama-pretrain  4x[H100:8]  3 hrs ago  2h 58m  1h 14m  1  FAILED_NO_RESOURCE"]  # fmt: skip
    logs = {"sky-controller.log": CONTROLLER, "jobs-queue.log": queue}
    result = diagnose_bundle(write_bundle(tmp_path, logs=logs, scheduler="static", job_id="7"))
    assert result["outcome"] == "ambiguous"
    assert ("scheduler", "preemption") in {(c["domain"], c["subdomain"]) for c in result["candidates"]}
    assert "skypilot.no_resource" in {s["rule"] for s in result["symptoms"]}


def test_a_gpu_that_fell_off_the_bus_explains_the_skypilot_cluster_failure(tmp_path):
    bundle = gpu_off_the_bus(tmp_path, scheduler="static", job_id="7")
    moment = (START + timedelta(minutes=15)).strftime("%m-%d %H:%M:%S")
    line = f"I {moment} controller.py:251] Cluster is preempted or failed (status: INIT). Recovering..."
    (bundle / "logs" / "sky-controller.log").write_text(line + "\n")
    result = diagnose_bundle(bundle)
    assert classification(result) == ("attributed", "hardware", "gpu.bus")
    assert result["root_cause"]["nodes"] == ["node02"]
    assert "skypilot.cluster_preempted" in {s["rule"] for s in result["symptoms"]}


# -- Kubernetes Jobs and JobSets --------------------------------------------------------------------------------


def k8s_event(time: str, reason: str, message: str, node: str | None = None) -> dict:
    return {
        "time": f"2026-11-02T{time}Z",
        "node": node,
        "source": "job-controller",
        "reason": reason,
        "message": message,
    }


def k8s_bundle(tmp_path, logs=None, events=()):
    return write_bundle(
        tmp_path, logs=logs or {}, events={"kubernetes.json": list(events)}, scheduler="kubernetes",
        job_id="llama-pretrain", state="Failed", exit_code="",
    )  # fmt: skip


DESCRIBE_OOM = [
    "Name:             llama-pretrain-1-x7k2p",
    "Node:             node02/10.0.0.2",
    "Containers:",
    "  trainer:",
    "    State:          Terminated",
    "      Reason:       OOMKilled",
    "      Exit Code:    137",
]
BACKOFF = k8s_event("10:16:00", "BackoffLimitExceeded", "Job has reached the specified backoff limit")


def test_a_pods_oom_kill_explains_the_jobs_backoff_limit(tmp_path):
    bundle = k8s_bundle(tmp_path, logs={"node02/describe-pod.log": DESCRIBE_OOM}, events=[BACKOFF])
    result = diagnose_bundle(bundle)
    assert classification(result) == ("attributed", "application", "host_oom")
    assert result["root_cause"]["nodes"] == ["node02"]
    assert {s["rule"]: s["role"] for s in result["symptoms"]}["k8s.job_failed"] == "teardown"


def test_a_backoff_limit_alone_names_no_cause(tmp_path):
    result = diagnose_bundle(k8s_bundle(tmp_path, events=[BACKOFF]))
    assert result["outcome"] == "unattributed"  # the Job gave up on its pods: their own lines would say why
    assert [s["rule"] for s in result["symptoms"]] == ["k8s.job_failed"]


def test_a_jobs_active_deadline_is_its_time_limit(tmp_path):
    event = k8s_event("10:29:00", "DeadlineExceeded", "Job was active longer than specified deadline")
    result = diagnose_bundle(k8s_bundle(tmp_path, events=[event]))
    assert classification(result) == ("attributed", "scheduler", "time_limit")
    assert (result["root_cause"]["rule"], result["root_cause"]["nodes"]) == ("k8s.job_deadline", [])


def test_a_node_shutdown_explains_the_jobset_that_failed_with_it(tmp_path):
    describe = ["Status:           Failed", "Reason:           Terminated",
                "Message:          Pod was terminated in response to imminent node shutdown."]  # fmt: skip
    failed = k8s_event(
        "10:16:00", "FailedJobs", "jobset failed due to one or more job failures (first failed job: llama-workers-2)"
    )
    result = diagnose_bundle(k8s_bundle(tmp_path, logs={"node03/describe-pod.log": describe}, events=[failed]))
    assert classification(result) == ("attributed", "infrastructure", "maintenance")
    assert result["root_cause"]["nodes"] == ["node03"]
    assert "jobset.failed" in {s["rule"] for s in result["symptoms"]}
