"""Hangs: progress that stops long before the scheduler ends the job is the cause; the verdict a symptom."""

from engine.tests.bundles import diagnose_bundle, write_bundle

END = "2026-11-02T12:00:00Z"
CANCELLED = "slurmstepd: error: *** JOB 48213 ON node01 CANCELLED AT 2026-11-02T12:00:00 DUE TO TIME LIMIT ***"


def megatron(minute: int, iteration: int) -> str:
    return (
        f" [2026-11-02 09:{minute:02d}:00] iteration {iteration:8d}/{100000:8d} |"
        f" consumed samples: {iteration * 64:12d} | elapsed time per iteration (ms): 30000.0 | lm loss: 2.345E+00 |"
    )


PROGRESS = [megatron(minute, minute * 2) for minute in range(0, 40)]
WATCHDOG = (
    "[rank3]:[E1102 10:09:31.000000000 ProcessGroupNCCL.cpp:616] [Rank 3] Watchdog caught collective operation"
    " timeout: WorkNCCL(SeqNum=3106, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=1800000) ran for"
    " 1800077 milliseconds before timing out."
)


def diagnose(tmp_path, lines, **attempt):
    record = {"end": END, "state": "TIMEOUT", "exit_code": "0:15", **attempt}
    return diagnose_bundle(write_bundle(tmp_path, logs={"slurm-48213.out": lines}, **record))


def test_progress_that_stops_hours_before_the_time_limit_is_a_hang_in_the_framework(tmp_path):
    result = diagnose(tmp_path, [*PROGRESS, CANCELLED])
    assert (result["outcome"], result["domain"], result["subdomain"]) == ("attributed", "software", "framework")
    assert result["root_cause"]["rule"] == "hang.stalled"
    assert result["root_cause"]["time"] == "2026-11-02T09:39:00Z"  # the last progress line
    assert result["root_cause"]["nodes"] == []
    assert {s["rule"] for s in result["symptoms"]} >= {"slurm.time_limit"}  # the verdict is a symptom
    assert result["evidence"][0]["ref"] == "logs/slurm-48213.out:40"


def test_a_watchdog_timeout_after_progress_stopped_makes_it_a_collective_hang(tmp_path):
    result = diagnose(tmp_path, [*PROGRESS, WATCHDOG, CANCELLED])
    assert (result["domain"], result["subdomain"], result["root_cause"]["rule"]) == (
        "software",
        "nccl",
        "hang.collective",
    )
    assert {"nccl.watchdog_timeout", "slurm.time_limit"} <= {s["rule"] for s in result["symptoms"]}


def test_progress_up_to_the_end_leaves_the_time_limit_the_cause(tmp_path):
    lines = [megatron(minute, minute) for minute in range(0, 60)]
    result = diagnose(tmp_path, [*lines, CANCELLED], end="2026-11-02T10:00:00Z")
    assert (result["domain"], result["subdomain"]) == ("scheduler", "time_limit")


def test_a_slow_cadence_is_not_mistaken_for_a_hang(tmp_path):
    # One line every 25 minutes: 40 minutes of quiet before the time limit is less than three intervals.
    lines = [megatron(0, 1), megatron(25, 2)]
    lines += [line.replace("09:", "10:", 1) for line in (megatron(15, 3), megatron(40, 4))]
    result = diagnose(tmp_path, [*lines, CANCELLED], end="2026-11-02T11:20:00Z")
    assert result["subdomain"] == "time_limit"


def test_a_job_that_failed_on_its_own_is_not_a_hang(tmp_path):
    result = diagnose(tmp_path, [*PROGRESS, WATCHDOG], state="FAILED", exit_code="1:0")
    assert result["outcome"] == "unattributed"


def test_a_job_that_hung_after_it_printed_its_completion(tmp_path):
    lines = [
        "[2026-11-02 09:00:00,000] INFO trainer: starting",
        "{'loss': 1.2045, 'grad_norm': 0.71, 'learning_rate': 4.9e-05, 'epoch': 0.98}",
        "[2026-11-02 09:30:00,000] INFO trainer: saving",
        "Training completed. Do not forget to share your model on huggingface.co/models =)",
        "[2026-11-02 09:30:05,000] INFO trainer: destroying the process group",
    ]
    result = diagnose(tmp_path, lines, state="CANCELLED", exit_code="0:15", reason="cancelled by alice")
    assert (result["subdomain"], result["root_cause"]["rule"]) == ("framework", "hang.teardown")
    assert result["root_cause"]["summary"].startswith("The job finished training and then hung in teardown: 150 min")
    assert result["root_cause"]["time_approx"] is True
    assert result["root_cause"]["time_bounds"] == ["2026-11-02T09:30:00Z", "2026-11-02T09:30:05Z"]


def test_undated_progress_with_nothing_dated_after_it_proves_no_hang(tmp_path):
    bars = [f"Epoch 3:  {p:2d}%|#####     | {p * 10}/1000 [1:00:00<1:00:00,  1.00it/s]" for p in range(1, 40)]
    result = diagnose(tmp_path, ["[2026-11-02 09:00:00,000] INFO start", *bars])
    assert result["subdomain"] == "time_limit"  # the last bar may have been printed any time before the end


def test_a_scripts_own_step_lines_count_as_progress(tmp_path):
    lines = [f"2026-11-02 09:{m:02d}:00,000 - INFO - __main__ - step {m * 10} | loss 2.1 | lr 3e-4" for m in range(40)]
    result = diagnose(tmp_path, [*lines, WATCHDOG, CANCELLED])
    assert (result["subdomain"], result["root_cause"]["rule"]) == ("nccl", "hang.collective")


def step(second: int, number: int) -> str:
    """A training script's own step line, ``second`` seconds after 09:00."""
    return f"[2026-11-02 09:{second // 60:02d}:{second % 60:02d},000] INFO step {number} | loss 2.31"


def test_the_silence_is_measured_against_the_jobs_own_pace(tmp_path):
    """Steps every two seconds, then seven minutes of silence before the cancellation: a hang for this job."""
    lines = [step(2 * i, i) for i in range(120)]
    result = diagnose(tmp_path, lines, state="CANCELLED", end="2026-11-02T09:11:00Z", reason="cancelled by bob")
    assert (result["subdomain"], result["root_cause"]["rule"]) == ("framework", "hang.stalled")


def test_a_silence_shorter_than_five_of_the_jobs_intervals_is_not_a_hang(tmp_path):
    """Steps every two minutes: nine minutes without one is under five intervals, so the time limit stands."""
    lines = [step(120 * i, i) for i in range(25)]
    result = diagnose(tmp_path, [*lines, CANCELLED], end="2026-11-02T09:57:00Z")
    assert result["subdomain"] == "time_limit"


def test_a_teardown_hang_with_a_watchdog_timeout_in_the_final_barrier_is_still_the_teardowns(tmp_path):
    lines = [
        "[2026-11-02 09:00:00,000] INFO trainer: starting",
        "[2026-11-02 09:30:00,000] INFO Training completed",
        WATCHDOG,
    ]
    result = diagnose(tmp_path, [*lines, CANCELLED])
    assert result["root_cause"]["rule"] == "hang.teardown"
    assert "nccl.watchdog_timeout" in {s["rule"] for s in result["symptoms"]}


def test_a_completion_line_followed_by_more_steps_is_no_teardown_hang(tmp_path):
    lines = ["[2026-11-02 09:00:00,000] INFO Training completed", *(step(600 + 2 * i, i) for i in range(10))]
    result = diagnose(tmp_path, [*lines, CANCELLED])
    assert result["root_cause"]["rule"] == "hang.stalled"
