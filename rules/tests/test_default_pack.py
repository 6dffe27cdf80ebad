"""The default pack on whole failures, written from how these jobs fail (docs of the field guide)."""

NODES = ["node01", "node02", "node03", "node04"]


def quiet_syslogs(until: dict[str, str]) -> dict[str, list[str]]:
    """Each node's syslog with routine noise every minute from 09:00 until its time (HH:MM)."""
    logs = {}
    for node, stop in until.items():
        hour, minute = map(int, stop.split(":"))
        count = (hour - 9) * 60 + minute + 1
        logs[f"{node}/syslog.log"] = [
            f"Nov  2 {9 + i // 60:02d}:{i % 60:02d}:00 {node} CRON[{100 + i}]: (root) CMD (debian-sa1 1 1)"
            for i in range(count)
        ]
    return logs


def test_a_node_that_goes_silent_under_node_fail_is_the_lost_node(tmp_path, write_bundle, diagnose_bundle):
    logs = quiet_syslogs({"node01": "10:29", "node02": "10:29", "node03": "10:11", "node04": "10:28"})
    result = diagnose_bundle(write_bundle(tmp_path, logs=logs, state="NODE_FAIL", exit_code="0:0"))
    assert (result["outcome"], result["subdomain"]) == ("attributed", "node_lost")
    assert result["root_cause"]["nodes"] == ["node03"]


def test_a_silent_node_alone_is_not_a_cause(tmp_path, write_bundle, diagnose_bundle):
    logs = quiet_syslogs({"node01": "10:29", "node02": "10:29", "node03": "10:11", "node04": "10:28"})
    assert diagnose_bundle(write_bundle(tmp_path, logs=logs))["outcome"] == "unattributed"


def test_a_kernel_panic_explains_the_node_loss(tmp_path, write_bundle, diagnose_bundle):
    logs = quiet_syslogs({"node01": "10:29", "node02": "10:29", "node03": "10:10", "node04": "10:28"})
    logs["node03/syslog.log"].append("Nov  2 10:10:30 node03 kernel: Kernel panic - not syncing: Fatal machine check")
    logs["slurm-48213.out"] = ["srun: error: Node failure on node03"]
    result = diagnose_bundle(write_bundle(tmp_path, logs=logs, state="NODE_FAIL", exit_code="0:0"))
    assert (result["domain"], result["subdomain"], result["root_cause"]["nodes"]) == (
        "hardware",
        "host.kernel",
        ["node03"],
    )
    assert {s["rule"] for s in result["symptoms"]} >= {"slurm.node_failure_line"}


def test_links_down_on_every_node_at_once_is_the_switch(tmp_path, write_bundle, diagnose_bundle):
    logs = {
        f"{node}/syslog.log": [f"Nov  2 10:14:0{i} {node} kernel: mlx5_core 0000:40:00.0 mlx5_0: Port: 1 Link DOWN"]
        for i, node in enumerate(NODES)
    }
    result = diagnose_bundle(write_bundle(tmp_path, logs=logs))
    assert (result["outcome"], result["domain"], result["subdomain"]) == ("attributed", "network", "switch")
    assert result["root_cause"]["nodes"] == []


def test_one_link_down_is_that_nodes_cable_or_port(tmp_path, write_bundle, diagnose_bundle):
    logs = {"node02/syslog.log": ["Nov  2 10:14:00 node02 kernel: mlx5_core 0000:40:00.0 mlx5_0: Port: 1 Link DOWN"]}
    result = diagnose_bundle(write_bundle(tmp_path, logs=logs))
    assert (result["subdomain"], result["root_cause"]["nodes"]) == ("link.infiniband", ["node02"])


def test_a_fatal_nvswitch_error_explains_the_nvlink_xids_on_every_gpu(tmp_path, write_bundle, diagnose_bundle):
    logs = {
        f"{node}/syslog.log": [
            f"Nov  2 10:14:0{i} {node} kernel: NVRM: Xid (PCI:0000:0{i}:00): 149, NETIR_LINK_EVT Fatal XC0 i0 Link 00"
        ]
        for i, node in enumerate(NODES)
    }
    logs["node01/syslog.log"].insert(
        0,
        "Nov  2 10:13:59 node01 kernel: nvidia-nvswitch0: SXid (PCI:0000:c3:00.0): 24007, Fatal, Link 28 "
        "sourcetrack timeout",
    )
    result = diagnose_bundle(write_bundle(tmp_path, logs=logs))
    assert (result["outcome"], result["subdomain"]) == ("attributed", "nvswitch")


def test_a_lustre_outage_explains_the_time_limit_that_ended_the_hung_job(tmp_path, write_bundle, diagnose_bundle):
    lines = [
        "LNet: 6991:0:(o2iblnd_cb.c:3174:kiblnd_check_conns()) Timed out tx for 10.135.117.155@o2ib: 357 seconds",
        "Lustre: proj-MDT0000-mdc-ffff880e6a381af7: Connection to proj-MDT0000 (at 10.135.117.155@o2ib) was lost",
        "LustreError: 11-0: proj-MDT0000-mdc-ffff880e6a381af7: operation obd_ping to node 10.135.117.155@o2ib "
        "failed: rc = -107",
    ]
    logs = {
        f"{node}/syslog.log": [
            f"Nov  2 09:3{i} :00 {node} kernel: {text}".replace(" :", ":") for i, text in enumerate(lines)
        ]
        for node in NODES
    }
    result = diagnose_bundle(write_bundle(tmp_path, logs=logs, state="TIMEOUT", exit_code="0:0"))
    assert (result["domain"], result["subdomain"], result["root_cause"]["nodes"]) == ("storage", "filesystem", [])
    assert ("slurm.time_limit", "cascade") in {(s["rule"], s["role"]) for s in result["symptoms"]}


def test_the_application_side_of_a_gpu_fault_points_at_the_node_when_the_kernel_log_is_missing(
    tmp_path, write_bundle, diagnose_bundle
):
    logs = {
        "slurm-48213.out": [
            "[2026-11-02 10:14:00,000] iteration 7000",
            "18: [rank18]:[E1102 10:14:07.1 ProcessGroupNCCL.cpp:1899] Process group watchdog thread terminated with "
            "exception: CUDA error: uncorrectable ECC error encountered",
            "3: [rank3]:[E1102 10:24:07.1 ProcessGroupNCCL.cpp:607] Watchdog caught collective operation timeout",
        ]
    }
    result = diagnose_bundle(write_bundle(tmp_path, logs=logs))
    assert (result["subdomain"], result["root_cause"]["nodes"]) == ("gpu.memory", ["node03"])


def test_another_jobs_lines_in_a_shared_slurmd_log_do_not_count(tmp_path, write_bundle, diagnose_bundle):
    logs = {
        "node01/slurmd.log": [
            "[2026-11-02T10:20:00.000] error: *** JOB 99999 ON node01 CANCELLED AT 2026-11-02T10:20:00 "
            "DUE TO TIME LIMIT ***",
        ]
    }
    assert diagnose_bundle(write_bundle(tmp_path / "other", logs=logs))["outcome"] == "unattributed"
    logs = {"node01/slurmd.log": [logs["node01/slurmd.log"][0].replace("99999", "48213")]}
    assert diagnose_bundle(write_bundle(tmp_path / "own", logs=logs))["subdomain"] == "time_limit"


def test_two_hardware_faults_of_about_equal_weight_a_second_apart_are_ambiguous(
    tmp_path, write_bundle, diagnose_bundle
):
    xid = "Nov  2 10:14:07 node02 kernel: NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus."
    ecc = [
        "[2026-11-02 10:14:08,000] step 7",
        "[rank17]: RuntimeError: CUDA error: uncorrectable ECC error encountered",
    ]
    result = diagnose_bundle(write_bundle(tmp_path / "a", logs={"node02/syslog.log": [xid], "node03/train.log": ecc}))
    assert (result["outcome"], result["domain"]) == ("ambiguous", "hardware")
    assert sorted(n for c in result["candidates"] for n in c["nodes"]) == ["node02", "node03"]
    oom = ["Nov  2 10:14:08 node03 kernel: Out of memory: Killed process 4242 (python3)"]
    result = diagnose_bundle(write_bundle(tmp_path / "b", logs={"node02/syslog.log": [xid], "node03/syslog.log": oom}))
    assert (result["outcome"], result["subdomain"]) == ("attributed", "gpu.bus")
