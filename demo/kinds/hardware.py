"""GPU and NVSwitch faults: the lines the NVIDIA driver, the PCIe AER driver and Fabric Manager print.

Xid line shapes follow the Xid catalog and the driver's own wording (``NVRM: Xid (PCI:0000:1b:00): 79,
...``); NVLink5 Xids (144-150) use the ``<UNIT> Fatal XC0 i0 Link N (...)`` form of Blackwell drivers.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from demo.draft import BundleDraft

UNKNOWN = "pid='<unknown>', name=<unknown>"


def _upstream_port(pci: str) -> str:
    """The PCIe switch port above a GPU: one bus number up."""
    domain, bus, _ = pci.split(":")
    return f"{domain}:{int(bus, 16) - 1:02x}:00.0"


def falls_off_the_bus(d: BundleDraft, node: str, local: int, fault: datetime) -> None:
    """Corrected AER errors on the GPU's link, then a fatal Surprise Down and Xid 79."""
    pci = d.site.gpu_pci[local]
    port = _upstream_port(pci)
    moment = d.after(fault, -3000, -240)
    for _ in range(d.rng.randrange(1, 4)):
        d.kernel(node, moment, f"pcieport {port}: AER: Corrected error message received from {port}")
        d.kernel(
            node, moment, f"pcieport {port}: PCIe Bus Error: severity=Corrected, type=Data Link Layer, (Transmitter ID)"
        )
        d.kernel(node, moment, f"pcieport {port}:   device [10b5:c010] error status/mask=00001000/00002000")
        d.kernel(node, moment, f"pcieport {port}:    [12] Timeout               ")
        moment = d.after(moment, 20, 600)
        if moment >= fault:
            break
    d.kernel(node, fault, f"pcieport {port}: AER: Uncorrected (Fatal) error received: {port}")
    d.kernel(
        node,
        fault,
        f"pcieport {port}: PCIe Bus Error: severity=Uncorrected (Fatal), type=Transaction Layer, (Receiver ID)",
    )
    d.kernel(node, fault, f"pcieport {port}:   device [10b5:c010] error status/mask=00000020/00000000")
    d.kernel(node, fault, f"pcieport {port}:    [ 5] Surprise Down Error    (First)")
    lost = fault + timedelta(milliseconds=d.rng.randrange(60, 180))
    d.kernel(node, lost, f"NVRM: GPU at PCI:{pci}: {d.uuids[node, local]}")
    d.kernel(node, lost, f"NVRM: GPU Board Serial Number: {d.rng.randrange(10**12, 10**13)}")
    d.xid(node, local, lost, 79, f"{UNKNOWN}, GPU has fallen off the bus.")
    d.kernel(node, lost, f"NVRM: GPU {pci}.0: GPU has fallen off the bus.")
    if d.rng.random() < 0.5:
        d.kernel(
            node,
            lost,
            f"NVRM: Xid (PCI:{pci}): 154, GPU recovery action changed from 0x0 (None) to 0x2 (Node Reboot Required)",
        )
    d.training.cuda_failure(
        d.rank(node, local), d.after(fault, 1, 8), d.rng.choice(("unknown error", "unspecified launch failure"))
    )


def double_bit_error(d: BundleDraft, node: str, local: int, fault: datetime) -> None:
    """Xid 48 (DBE) and 63 (row remap pending); the rank on that GPU aborts within a second."""
    address = d.rng.randrange(0x1000000, 0x3FFFFFFFF)
    d.xid(
        node,
        local,
        fault,
        48,
        f"{UNKNOWN}, An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at "
        f"physAddr 0x{address:x} partition {d.rng.randrange(0, 24)}, subpartition {d.rng.randrange(0, 4)}.",
    )
    d.xid(
        node,
        local,
        fault + timedelta(milliseconds=d.rng.randrange(10, 40)),
        63,
        f"{UNKNOWN}, Row Remapper: New row (0x{address:016x}) marked for remapping, reset gpu to activate.",
    )
    if d.rng.random() < 0.4:
        d.kernel(
            node,
            fault + timedelta(milliseconds=50),
            f"NVRM: Xid (PCI:{d.site.gpu_pci[local]}): 154, GPU recovery action changed from 0x0 (None) to 0x4 "
            "(Drain and Reset)",
        )
    d.counter("dcgm_ecc_dbe_vol_total", "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", {(node, local): fault})
    d.training.cuda_failure(d.rank(node, local), d.after(fault, 0.2, 0.9), "uncorrectable ECC error encountered")


def gpu_fallen_off_bus(d: BundleDraft) -> tuple[str, ...]:
    """A GPU falls off the PCIe bus; its rank dies of a CUDA error, the others time out 600 s later."""
    fault = d.trains_for(20, 240)
    falls_off_the_bus(d, d.culprit, d.rng.randrange(len(d.site.gpu_pci)), fault)
    d.cascade(fault)
    d.failed()
    return (d.culprit,)


def gpu_ecc_dbe(d: BundleDraft) -> tuple[str, ...]:
    """An uncorrectable ECC error (Xid 48 + 63); the rank aborts, the others time out."""
    fault = d.trains_for(20, 300)
    double_bit_error(d, d.culprit, d.rng.randrange(len(d.site.gpu_pci)), fault)
    d.cascade(fault)
    d.failed()
    return (d.culprit,)


def gpu_nvlink(d: BundleDraft) -> tuple[str, ...]:
    """A fatal NVLink5 Xid on one GPU; the driver cleans up the node's other GPUs (Xid 45, teardown)."""
    fault = d.trains_for(15, 200)
    node, local = d.culprit, d.rng.randrange(len(d.site.gpu_pci))
    code, unit = d.rng.choice(((149, "NETIR_LINK_EVT"), (144, "SAW_MVB"), (145, "RLW_RXPIPE")))
    link = d.rng.randrange(0, 18)
    d.xid(
        node,
        local,
        fault,
        code,
        f"{unit} Fatal XC0 i0 Link {link:02d} (0x{d.rng.getrandbits(32):08x} 0x00000000 0x00000000 0x00000000 "
        "0x00000000 0x00000000)",
    )
    d.kernel(
        node,
        fault + timedelta(milliseconds=2),
        f"NVRM: Xid (PCI:{d.site.gpu_pci[local]}): 154, GPU recovery action changed from 0x0 (None) to 0x4 "
        "(Drain and Reset)",
    )
    failing = d.rank(node, local)
    d.training.cuda_failure(
        failing, d.after(fault, 0.3, 1.5), "Invalid access of peer GPU memory over nvlink or a hardware error"
    )
    cleanup = d.after(fault, 1.5, 3)
    for rank in d.training.on(node):
        if rank is not failing:
            d.xid(
                node,
                rank.local,
                cleanup,
                45,
                f"pid={rank.pid}, name=python3, Ch {d.rng.randrange(1, 16):08x} caused by previous Xid {code}",
            )
            if d.training.is_alive(rank, cleanup):
                d.training.cuda_failure(rank, d.after(cleanup, 0.1, 1), "unspecified launch failure")
    d.cascade(fault)
    d.failed()
    return (node,)


def nvswitch_fatal(d: BundleDraft) -> tuple[str, ...]:
    """A fatal NVSwitch SXid and Fabric Manager's report of it; the node's ranks see an uncorrectable NVLink
    error, the others time out."""
    fault = d.trains_for(20, 240)
    node = d.culprit
    switch = d.rng.randrange(0, 2)
    bus = ("8a", "9b")[switch]
    port = d.rng.randrange(0, 72)
    prefix = f"nvidia-nvswitch{switch}: SXid (PCI:0000:{bus}:00.0): 24007"
    d.kernel(node, fault, f"{prefix}, Fatal, Link {port} sourcetrack timeout error (First)")
    d.kernel(node, fault, f"{prefix}, Severity 1 Engine instance {port} Sub-engine instance 00")
    d.kernel(node, fault, f"{prefix}, Data {{{', '.join(['0x00000000'] * 8)}}}")
    d.daemon(
        node,
        d.after(fault, 0.05, 0.4),
        f"nv-fabricmanager[{d.rng.randrange(2000, 4000)}]",
        f"detected NVSwitch fatal error 24007 on fid 0 on NVSwitch pci bus id 00000000:{bus.upper()}:00.0 "
        f"physical id {switch} port {port}",
    )
    for rank in d.training.on(node):
        moment = d.after(fault, 0.2, 1.5)
        if d.training.is_alive(rank, moment):
            d.training.cuda_failure(rank, moment, "an uncorrectable NVLink error was detected during the execution")
    d.cascade(fault)
    d.failed()
    return (node,)


def two_hardware_faults(d: BundleDraft) -> tuple[str, ...]:
    """Two unrelated GPU faults within a second on two nodes (a DBE and a GPU off the bus): nothing can rank
    one above the other."""
    fault = d.trains_for(20, 240)
    other = d.rng.choice([n for n in d.nodes if n != d.culprit])
    gpus = len(d.site.gpu_pci)
    double_bit_error(d, d.culprit, d.rng.randrange(gpus), fault)
    falls_off_the_bus(d, other, d.rng.randrange(gpus), d.after(fault, 0.05, 0.9))
    d.cascade(fault)
    d.failed()
    return tuple(sorted((d.culprit, other)))


def gpu_thermal_slowdown(d: BundleDraft) -> tuple[str, ...]:
    """One GPU overheats (a failed fan or blocked airflow): DCGM's health watch reports thermal clock events,
    the GPU runs at a fraction of its clocks, every iteration waits for it, and at last a collective waits
    longer than the NCCL timeout. Only DCGM's warning says why: the default rule pack has no thermal rule,
    so the attempt is unattributed until one is written (the demonstration of writing a rule)."""
    begin = d.begin()
    onset = d.fault_after(begin, 30, 240)
    node, local = d.culprit, d.rng.randrange(len(d.site.gpu_pci))
    d.overheating[node, local] = onset
    d.needed.add("metrics/dcgm_gpu_temp.json")
    hung = onset + timedelta(minutes=d.rng.uniform(6, 14))
    d.training.train(begin, hung, slow_from=onset + timedelta(minutes=2))
    pid = d.rng.randrange(2000, 4000)
    moment = onset + timedelta(seconds=d.rng.uniform(30, 90))
    while moment < hung + timedelta(seconds=600):
        d.daemon(
            node,
            moment,
            f"nv-hostengine[{pid}]",
            f"ERROR [{pid}:{pid + d.rng.randrange(8, 40)}] [[Health]] Detected a WARNING in health "
            f"system Thermal: 'Detected clocks event due to thermal violation in GPU {local}. Verify that the cooling "
            "on this machine is functional, including external, thermal material interface, fans, and any other "
            "components.'",
        )
        moment = d.after(moment, 55, 65)
    stalled = d.training.last_progress + timedelta(seconds=d.rng.uniform(1, 5))
    hot = d.rank(node, local)
    d.cascade(stalled, spare=(hot,))
    late = stalled + timedelta(seconds=600 + d.rng.uniform(60, 240))
    if d.training.is_alive(hot, late):
        seq, op, numel = d.training.collective()
        d.training.watchdog_timeout(hot, late, seq, op, numel)
    d.failed()
    return ()
