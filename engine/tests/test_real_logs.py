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
