"""Logs as real reports publish them: no timestamps, one mixed file for every rank, hosts only in prefixes."""

from engine.tests.bundles import diagnose_bundle, write_bundle

ILLEGAL = "RuntimeError: CUDA error: an illegal memory access was encountered"
OOM = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"
ECC = "RuntimeError: CUDA error: uncorrectable ECC error encountered"
TIMEOUT = "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=44, OpType=ALLREDUCE, NumelIn=1)"


def diagnose(tmp_path, logs, **attempt):
    return diagnose_bundle(write_bundle(tmp_path, logs=logs, **attempt))


def test_a_bundle_without_a_single_timestamp_is_decided_by_its_lines(tmp_path):
    lines = [
        "node02:4242:4300 [3] NCCL INFO comm 0x55d3 rank 11 nranks 32 - Init COMPLETE",
        f"node02:4242:4242 [3] {ECC}",
        *[f"node0{n}:{4000 + n}:{4100 + n} [0] {TIMEOUT}" for n in (1, 3, 4)],
    ]
    result = diagnose(tmp_path, {"train.log": lines}, tasks_per_node=None)
    assert (result["outcome"], result["subdomain"], result["root_cause"]["nodes"]) == (
        "attributed",
        "gpu.memory",
        ["node02"],
    )
    assert result["root_cause"]["time"] is None
    assert result["root_cause"]["time_approx"] is True
    assert all(item.get("time_approx") for item in result["evidence"])
    assert result["symptoms"]
    assert all(symptom["first_approx"] and len(symptom["first_bounds"]) == 2 for symptom in result["symptoms"])


def test_undated_causes_in_one_stream_are_ordered_by_their_lines(tmp_path):
    lines = [f"node03: {ILLEGAL}", f"node01: {OOM}"]
    result = diagnose(tmp_path, {"train.log": lines}, tasks_per_node=None)
    assert (result["outcome"], result["root_cause"]["nodes"]) == ("attributed", ["node03"])


def test_undated_causes_in_two_streams_cannot_be_ranked_apart(tmp_path):
    logs = {"node03/train.log": [ILLEGAL], "node01/train.log": [OOM]}
    result = diagnose(tmp_path, logs)
    assert result["outcome"] == "ambiguous"
    assert sorted(n for c in result["candidates"] for n in c["nodes"]) == ["node01", "node03"]


def test_hosts_come_from_the_prefixes_real_launchers_print(tmp_path):
    lines = [
        "worker-2: [2026-11-02 09:10:00,000] [INFO] [engine.py:1] step=10, skipped=0, lr=[0.1], mom=[0.9]",
        f"worker-3: {ECC}",
        f"worker-1: {TIMEOUT}",
    ]
    nodes = ["worker-0", "worker-1", "worker-2", "worker-3"]
    result = diagnose(tmp_path, {"deepspeed.log": lines}, nodes=nodes, tasks_per_node=None)
    assert result["root_cause"]["nodes"] == ["worker-3"]


def test_a_redacted_host_is_still_a_host(tmp_path):
    lines = [f"...-48:2814086:2814172 [6] {ECC}", f"...-51:2814090:2814190 [0] {TIMEOUT}"]
    result = diagnose(tmp_path, {"train.log": lines}, nodes=["node-0001", "node-0002"], tasks_per_node=None)
    assert (result["subdomain"], result["root_cause"]["nodes"]) == ("gpu.memory", ["...-48"])


def test_the_output_of_a_one_node_job_is_that_nodes(tmp_path):
    result = diagnose(tmp_path, {"train.log": [ECC]}, nodes=["gpu-17"], tasks_per_node=None)
    assert result["root_cause"]["nodes"] == ["gpu-17"]


def test_srun_names_the_host_of_a_crashed_task(tmp_path):
    lines = ["srun: error: node04: task 27: Segmentation fault"]
    result = diagnose(tmp_path, {"slurm-1.out": lines}, tasks_per_node=None)
    assert result["outcome"] == "ambiguous"  # the program or a native library: the line cannot say
    assert {(c["domain"], c["subdomain"]) for c in result["candidates"]} == {
        ("application", "exception"),
        ("software", "framework"),
    }
    assert {n for c in result["candidates"] for n in c["nodes"]} == {"node04"}


def test_a_symptom_dated_by_its_own_line_is_exact(tmp_path):
    lines = [
        f"2026-11-02T10:00:00Z node02:4242:4242 [3] {ECC}",
        *[f"2026-11-02T10:10:0{n}Z node0{n}:{4000 + n}:{4100 + n} [0] {TIMEOUT}" for n in (1, 3)],
    ]
    result = diagnose(tmp_path, {"train.log": lines}, tasks_per_node=None)
    (symptom,) = [s for s in result["symptoms"] if s["rule"] == "nccl.watchdog_timeout"]
    assert symptom["first"] == "2026-11-02T10:10:01Z"
    assert "first_approx" not in symptom
    assert "first_bounds" not in symptom


XID_63 = "[ 4000.000000] NVRM: Xid (PCI:0000:3b:00): 63, pid=1234, Row Remapper: New row marked for remapping"
OOM_KILL = "[ 5123.456789] Out of memory: Killed process 4242 (python) total-vm:98765432kB, anon-rss:87654321kB"
CHILD_KILLED = (
    "[2026-11-02 10:14:07,123] torch.distributed.elastic.multiprocessing.api: [ERROR] failed (exitcode: -9) "
    "local_rank: 0 (pid: 4242) of binary: /usr/bin/python3"
)


def times_of(result):
    return {item["rule"]: (item["node"], item["time"], item.get("time_bounds")) for item in result["evidence"]}


def test_a_kernel_log_without_a_boot_anchor_is_dated_by_the_process_it_killed(tmp_path):
    """dmesg prints uptime only; torchrun's agent saw the process the OOM killer named exit at 10:14:07.123, so the
    kill happened at most 30 s before (extract.EXIT_NOTICED_WITHIN), and every line of that boot moves with it."""
    logs = {"node01/dmesg.log": [XID_63, OOM_KILL], "node01/train.log": [CHILD_KILLED]}
    result = diagnose(tmp_path, logs, nodes=["node01"])
    root = result["root_cause"]
    assert (result["subdomain"], root["rule"], root["nodes"]) == ("host_oom", "host.oom_killer", ["node01"])
    assert root["time_approx"] is True
    assert root["time_bounds"] == ["2026-11-02T10:13:37.123Z", "2026-11-02T10:14:07.123Z"]
    assert times_of(result)["gpu.xid.row_remap_pending"] == (  # 1,123.456789 s of uptime earlier
        "node01",
        "2026-11-02T09:54:53.666Z",
        ["2026-11-02T09:54:53.666Z", "2026-11-02T09:55:23.666Z"],
    )


def test_a_pid_seen_on_another_node_does_not_date_a_kernel_log(tmp_path):
    logs = {"node01/dmesg.log": [XID_63, OOM_KILL], "node02/train.log": [CHILD_KILLED]}
    times = times_of(diagnose(tmp_path, logs, nodes=["node01", "node02"]))
    window = ["2026-11-02T09:00:00Z", "2026-11-02T10:30:00Z"]  # only the attempt's window bounds them
    assert times["host.oom_killer"] == ("node01", None, window)
    assert times["gpu.xid.row_remap_pending"] == ("node01", None, window)
