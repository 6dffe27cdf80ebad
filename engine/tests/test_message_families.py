"""Wordings by family: the default pack classifies a family of messages by the structure they share, not by the
cases seen (issue 23, item 6). Each test writes a small bundle for the mechanism and runs the default pack on it."""

import pytest

from engine.tests.bundles import diagnose_bundle, write_bundle

TORCHRUN_FAILED = "torch.distributed.elastic.multiprocessing.errors.ChildFailedError:"


def app_log(*texts: str) -> list[str]:
    return [f"[2026-11-02 09:{i + 10:02d}:00,000] {text}" for i, text in enumerate(texts)]


@pytest.mark.parametrize(
    "line",
    [
        "python: error while loading shared libraries: libcudart.so.12: cannot open shared object file: "
        "No such file or directory",
        "ImportError: /opt/venv/lib/python3.11/site-packages/apex_C.cpython-311-x86_64-linux-gnu.so: "
        "undefined symbol: _ZN3c1015SmallVectorBaseIjE8grow_podEPKvmm",
        "OSError: /lib/x86_64-linux-gnu/libc.so.6: version `GLIBC_2.34' not found (required by /opt/lib/libfoo.so)",
        "./train: /usr/lib64/libstdc++.so.6: version `CXXABI_1.3.15' not found (required by ./train)",
    ],
)
def test_a_library_that_does_not_load_is_the_jobs_environment_even_when_one_node_printed_it(tmp_path, line):
    logs = {
        "node02/train.log": app_log("Starting rank 8", line, TORCHRUN_FAILED),
        "node01/train.log": app_log("Starting rank 0", "[rank0]: RuntimeError: NCCL communicator was aborted"),
    }
    result = diagnose_bundle(write_bundle(tmp_path, logs=logs))
    assert result["root_cause"]["rule"] == "app.shared_library"
    assert (result["domain"], result["subdomain"]) == ("application", "config")
    assert result["root_cause"]["nodes"] == []  # job-level: every rank loads the same libraries


def test_an_optional_library_probe_is_not_a_cause(tmp_path):
    probes = [
        "node01:2814086:2814086 [0] NCCL INFO NET/Plugin : Plugin load (libnccl-net.so) returned 2 : libnccl-net.so: "
        "cannot open shared object file: No such file or directory",
        "node01:2814086:2814086 [0] NCCL INFO Failed to open libibverbs.so[.1]",
        "libibverbs: Warning: couldn't load driver 'libmlx4-rdmav34.so': libmlx4-rdmav34.so: cannot open shared "
        "object file: No such file or directory",
    ]
    quiet = diagnose_bundle(write_bundle(tmp_path / "quiet", logs={"node01/train.log": app_log(*probes)}))
    assert quiet["root_cause"] is None
    oom = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"
    failed = diagnose_bundle(write_bundle(tmp_path / "oom", logs={"node01/train.log": app_log(*probes, oom)}))
    assert failed["root_cause"]["rule"] == "cuda.out_of_memory"
    assert not any(item["rule"] == "app.shared_library" for item in failed["evidence"])


@pytest.mark.parametrize(
    ("line", "rule", "classification"),
    [
        ("RuntimeError: CUDA error: too many resources requested for launch", "cuda.program_error",
         ("application", "cuda_error")),
        ("cupy_backends.cuda.api.runtime.CUDARuntimeError: cudaErrorInvalidConfiguration: "
         "invalid configuration argument", "cuda.program_error", ("application", "cuda_error")),
        ("RuntimeError: CUDA error: PTX JIT compiler library not found", "app.config_error", ("application", "config")),
    ],
)  # fmt: skip
def test_a_cuda_error_the_program_or_its_build_causes_is_the_jobs(tmp_path, line, rule, classification):
    logs = {"node03/train.log": app_log("Starting rank 16", line)}
    result = diagnose_bundle(write_bundle(tmp_path, logs=logs))
    assert (result["root_cause"]["rule"], (result["domain"], result["subdomain"])) == (rule, classification)
    assert result["root_cause"]["nodes"] == []


def test_a_cuda_error_of_the_nodes_mps_service_is_that_nodes(tmp_path):
    line = "CudaAPIError: [805] Call to cuCtxCreate_v4 results in CUDA_ERROR_MPS_CONNECTION_FAILED"
    result = diagnose_bundle(write_bundle(tmp_path, logs={"node03/train.log": app_log(line)}))
    assert (result["root_cause"]["rule"], result["subdomain"]) == ("cuda.mps", "driver.mps")
    assert result["root_cause"]["nodes"] == ["node03"]


def test_no_usable_gpu_is_ambiguous_between_the_node_and_the_job(tmp_path):
    logs = {"node02/train.log": app_log("RuntimeError: CUDA error: no CUDA-capable device is detected")}
    result = diagnose_bundle(write_bundle(tmp_path, logs=logs))
    assert result["outcome"] == "ambiguous"
    assert {(c["domain"], c["subdomain"]) for c in result["candidates"]} == {
        ("software", "driver"),
        ("hardware", "gpu"),
        ("application", "config"),
    }


def test_a_cuda_call_during_teardown_is_never_the_cause(tmp_path):
    ecc = "RuntimeError: CUDA error: uncorrectable ECC error encountered"
    after = ["RuntimeError: CUDA error: driver shutting down", "CUDA_ERROR_CONTEXT_IS_DESTROYED"]
    result = diagnose_bundle(write_bundle(tmp_path / "ecc", logs={"node02/train.log": app_log(ecc, *after)}))
    assert (result["root_cause"]["rule"], result["root_cause"]["nodes"]) == ("cuda.ecc_uncorrectable", ["node02"])
    alone = diagnose_bundle(write_bundle(tmp_path / "alone", logs={"node02/train.log": app_log(*after)}))
    assert alone["root_cause"] is None
    assert alone["candidates"] == []


NCCL_ERROR = (
    "[rank{rank}]: torch.distributed.DistBackendError: NCCL error in: /opt/pytorch/pytorch/torch/csrc/distributed/c10d/"
    "NCCLUtils.cpp:77, {text}, NCCL version 2.21.5"
)


@pytest.mark.parametrize("text", ["invalid usage (run with NCCL_DEBUG=WARN for details)", "invalid argument"])
def test_nccls_invalid_usage_or_argument_is_the_jobs_configuration(tmp_path, text):
    logs = {
        "node01/train.log": app_log(NCCL_ERROR.format(rank=0, text=text)),
        "node02/train.log": app_log("[rank8]: RuntimeError: NCCL communicator was aborted on rank 8."),
    }
    result = diagnose_bundle(write_bundle(tmp_path, logs=logs))
    assert (result["root_cause"]["rule"], result["domain"], result["subdomain"]) == (
        "nccl.invalid_usage",
        "application",
        "config",
    )
    assert result["root_cause"]["nodes"] == []


def test_an_nccl_operation_still_in_progress_is_a_symptom_of_what_stopped_it(tmp_path):
    pending = NCCL_ERROR.format(rank=8, text="NCCL operation in progress")
    alone = diagnose_bundle(write_bundle(tmp_path / "alone", logs={"node02/train.log": app_log(pending)}))
    assert alone["root_cause"] is None
    assert alone["candidates"] == []
    logs = {
        "node01/train.log": app_log("[rank0]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.00 GiB"),
        "node02/train.log": app_log(pending),
    }
    result = diagnose_bundle(write_bundle(tmp_path / "oom", logs=logs))
    assert (result["root_cause"]["rule"], result["root_cause"]["nodes"]) == ("cuda.out_of_memory", ["node01"])


@pytest.mark.parametrize(
    ("reason", "message", "rule", "subdomain"),
    [
        ("EvictionByEvictionAPI", "Eviction API: evicting", "k8s.api_eviction", "maintenance"),
        (
            "DeletionByTaintManager",
            "Taint manager: deleting due to NoExecute taint",
            "k8s.taint_eviction",
            "node_not_ready",
        ),
        ("DeletionByPodGC", "PodGC: node no longer exists", "k8s.pod_gc_node_gone", "node_lost"),
    ],
)
def test_a_pod_disruption_condition_names_what_took_the_node_away(tmp_path, reason, message, rule, subdomain):
    """The DisruptionTarget condition of a pod's status (its reason and message, as `kubectl get pod -o yaml` prints
    them) says why the pod was taken: a drain, a NoExecute taint, a node removed; the reason line itself is not read."""
    status = ["  - lastTransitionTime: \"2026-11-02T09:12:00Z\"", f"    message: '{message}'",
              f"    reason: {reason}", "    status: \"True\"", "    type: DisruptionTarget"]  # fmt: skip
    logs = {"node02/pod-status.log": status, "node01/train.log": app_log("[rank0]: RuntimeError: NCCL error")}
    result = diagnose_bundle(write_bundle(tmp_path, logs=logs))
    assert result["root_cause"]["rule"] == rule
    assert (result["domain"], result["subdomain"]) == ("infrastructure", subdomain)
    assert result["root_cause"]["nodes"] == ["node02"]


def journal(*texts: str, host: str = "node02") -> list[str]:
    return [f"Nov  2 09:{i + 10:02d}:00 {host} {text}" for i, text in enumerate(texts)]


@pytest.mark.parametrize(
    ("lines", "outcome", "rule"),
    [
        (("start-worker[901]: GCP Metadata Service says termination is imminent",
          "systemd-logind[812]: Power key pressed."), "attributed", "cloud.vm_preempted"),
        (("start-worker[901]: EC2 Metadata Service says termination is imminent",), "attributed", "cloud.vm_preempted"),
        (("systemd-logind[812]: Power key pressed short.",), "ambiguous", None),  # a stop presses it too
        (("start-worker[901]: Azure Metadata Service says a maintenance event is imminent",), "ambiguous", None),
    ],
)  # fmt: skip
def test_a_cloud_taking_the_vm_back_is_a_preemption_when_the_cloud_says_so(tmp_path, lines, outcome, rule):
    logs = {"node02/syslog.log": journal(*lines), "node01/train.log": app_log("[rank0]: RuntimeError: NCCL error")}
    result = diagnose_bundle(write_bundle(tmp_path, logs=logs))
    assert result["outcome"] == outcome
    if rule:
        assert (result["root_cause"]["rule"], result["root_cause"]["nodes"]) == (rule, ["node02"])
        assert (result["domain"], result["subdomain"]) == ("scheduler", "preemption")
    else:  # the hint or the Scheduled Event: a preemption or a maintenance, the VM named either way
        assert {(c["domain"], c["subdomain"]) for c in result["candidates"]} >= {
            ("scheduler", "preemption"), ("infrastructure", "maintenance")
        }  # fmt: skip
        assert all(c["nodes"] == ["node02"] for c in result["candidates"] if c["nodes"])
