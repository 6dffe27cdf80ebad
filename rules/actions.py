"""What a rule's recommended ``action`` asks an operator to do. The pack names actions; this says what each means.

The GPU actions follow the resolution buckets of NVIDIA's Xid catalog ("Analyzing Xid Errors with the Xid
Catalog", docs.nvidia.com/deploy/xid-errors): each Xid has an immediate action (``RESTART_APP``, ``RESET_GPU``,
``RESTART_BM``: reboot the bare-metal node, ``CONTACT_SUPPORT``, ...) and an investigatory one. The default pack
names NVIDIA's ``RESTART_BM`` ``NODE_REBOOT`` and adds ``DRAIN_AND_RESET`` for the errors whose catalog entry
resets the GPU only once no job uses it (uncorrectable ECC, row-remapping failures, NVLink errors); the other
actions are the pack's own, for causes outside the GPU.
"""

ACTIONS = {
    # the GPU, after NVIDIA's Xid resolution buckets
    "RESTART_APP": "Restart the job: NVIDIA's catalog bucket RESTART_APP, an error that ends the application but "
    "leaves the GPU and the node healthy. If it fails the same way again, the program is at fault.",
    "RESET_GPU": "Reset the GPU (nvidia-smi -r, or the node's GPU reset procedure) before the next job uses it: "
    "NVIDIA's bucket RESET_GPU, a state only a reset clears. The rest of the node is fine.",
    "DRAIN_AND_RESET": "Drain the node (no new job starts there), reset the failing part once no job uses it (the "
    "GPU for its memory and NVLink errors, which NVIDIA's catalog resets only when idle; a reboot for a host "
    "machine check), and run the health checks before resuming the node. If the error comes back after the "
    "reset, the part needs service.",
    "NODE_REBOOT": "Drain the node and reboot it: NVIDIA's bucket RESTART_BM (restart bare metal). The GPU left the "
    "PCIe bus, or the kernel or the bus failed, and nothing short of a reboot recovers it. If it fails again "
    "after the reboot, check the GPU's seating, power and cooling, or send it for service.",
    "FIX_DRIVER": "Update or reinstall the NVIDIA driver on the node (the driver and the CUDA runtime disagree, or "
    "the driver failed to load): NVIDIA's bucket UPDATE_SW.",
    "CHECK_GPU_AVAILABLE": "Check that the job's processes can use the node's GPUs: nvidia-smi on the node (a GPU "
    "missing, held by another process in an exclusive compute mode, or the driver not loaded), and the job's container "
    "and CUDA_VISIBLE_DEVICES (a job given no GPU fails the same way on every node).",
    "RESTART_MPS": "Restart the node's CUDA Multi-Process Service (nvidia-cuda-mps-control) and read its server log "
    "before resuming the node: the MPS service failed the job's processes, not the program.",
    "RESET_FABRIC": "Reset the NVSwitch fabric of the node (restart the Fabric Manager after the GPUs are idle, or "
    "reboot the node): an NVSwitch reported a fatal error and the GPUs cannot talk over NVLink.",
    "RESTART_FABRIC_MANAGER": "Restart the NVIDIA Fabric Manager service on the node and check that it reaches "
    "the ready state before resuming the node.",
    # the network
    "CHECK_CABLE_AND_PORT": "Check the link named in the log: the cable, its transceiver and the switch port "
    "(error counters, flapping). Drain the node until the link is clean.",
    "CHECK_NIC": "Check the node's network adapter (firmware, driver, error counters) and drain the node until "
    "it passes.",
    "CHECK_SWITCH": "Check the switch or subnet manager the log names: a fabric fault, not one node's.",
    "UPDATE_NCCL": "Update NCCL or change its configuration: the failure is a known NCCL bug or misconfiguration, "
    "not a fault of the hardware.",
    "UPDATE_OR_RECONFIGURE_COMMUNICATION_LIBRARY": "Update or reconfigure the communication library (UCX, MPI, "
    "libfabric) the log names: it crashed or was misconfigured.",
    # storage
    "CHECK_FILESYSTEM": "Check the shared file system the log names (its servers, the client's mount on the node): "
    "the job lost access to it.",
    "CHECK_DISK": "Check the node's local disk (SMART, kernel I/O errors) and drain the node until it is replaced "
    "or passes.",
    "FREE_SPACE": "Free space on the file system that filled up (or raise the quota), then restart the job.",
    "FREE_SPACE_OR_CHECK_PERMISSIONS": "Free space on the target file system or fix the permissions of the path "
    "the job could not write.",
    "RAISE_EPHEMERAL_STORAGE_OR_WRITE_ELSEWHERE": "Raise the pod's ephemeral-storage limit, or have the job write "
    "large files to a volume instead of the container's disk.",
    # memory and the host
    "RAISE_MEMORY_LIMIT": "Raise the job's memory limit (the scheduler's or the container's), or reduce what it "
    "holds in host memory.",
    "RAISE_MEMORY_OR_REDUCE_USE": "Give the job more memory, or make it use less (smaller batch, activation "
    "checkpointing, fewer data-loader workers).",
    "RAISE_SHM_SIZE": "Raise the shared-memory size of the job's container (/dev/shm), or use fewer data-loader "
    "workers.",
    "CHECK_SHM_SIZE": "Check the shared memory (/dev/shm) the job had: too small, or full, makes the data loader's "
    "workers die with a bus error.",
    "CHECK_SHM": "Give the job a usable /dev/shm: large enough (a container's default is 64 MB: --shm-size, "
    "--ipc=host or a memory-backed volume) and writable by the job's user.",
    "CHECK_NODE_PRESSURE": "Check the node's memory and disk pressure (the kubelet evicted the pod): other pods or "
    "the system use what the job needed.",
    "INSPECT_NODE": "Look at the node itself (console, BMC, system log): it stopped answering the scheduler. Drain "
    "it until the cause is known.",
    "CHECK_SLURMD_SPOOL": "Check the node's slurmd spool directory (SlurmdSpoolDir): it must exist, be writable "
    "and allow execution (not cleaned by a tmp cleaner, not mounted noexec); fix or reboot the node before it runs "
    "jobs again.",
    "CHECK_STATE_SAVE_LOCATION": "Check slurmctld's StateSaveLocation: free space on its file system, make it "
    "writable by SlurmUser and check that disk; then submit the job again.",
    "FIX_PROLOG_AND_RESUME_NODE": "Fix the scheduler's prolog script on the node (it failed, so the node was "
    "drained), then resume the node.",
    # the application and its configuration
    "FIX_APPLICATION": "Fix the program: the failure is in the job's own code or its use of the libraries. "
    "Restarting it unchanged will fail again.",
    "FIX_CONFIGURATION": "Fix the job's configuration (arguments, world size, paths) the log names.",
    "FIX_ENVIRONMENT": "Fix the job's software environment (versions of the framework, CUDA or libraries that do "
    "not fit together).",
    "INSPECT_HANG": "Find where the job hung: its progress stopped long before the scheduler ended it. Read the "
    "stack traces (py-spy dump, the Flight Recorder) of the ranks that stopped first.",
    "FIND_STRAGGLER_RANK": "Find the rank that never joined the collective the others waited in (the NCCL "
    "watchdog's, or the Flight Recorder's, report) and look at its node and its code path.",
    # the scheduler
    "RESUBMIT": "Resubmit the job: it was preempted or requeued, nothing failed.",
    "RAISE_TIME_LIMIT_OR_CHECKPOINT": "Raise the job's time limit, or checkpoint more often so a restart loses "
    "less: it ran out of time.",
    "CHECK_CAPACITY": "Check the cluster's capacity or quota: the job could not get the resources it asked for.",
    "CHECK_ADMISSION": "Check why the queue did not admit the job (Kueue's admission checks and quotas).",
    "NONE": "Nothing to do: someone cancelled the job.",
}


def action_meaning(action: str | None) -> str:
    """What ``action`` asks an operator to do ("" for none or one this list does not know)."""
    return ACTIONS.get(action or "", "")
