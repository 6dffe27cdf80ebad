"""A node's fabric link goes down: mlx5's port event, then NCCL's NET/IB completion errors.

The rank whose rail lost its link sees its sends exhaust the transport retry counter (status 12,
vendor err 129); its peers on the same rail then see their work requests flushed (status 5,
vendor err 249), which is secondary. The rest of the job times out or is torn down.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from demo import pytorch
from demo.draft import BundleDraft
from demo.training import NCCL_VERSION, Rank


def _completion_error(d: BundleDraft, rank: Rank, moment: datetime, peer: Rank, status: int) -> None:
    """NCCL's NET/IB completion error on ``rank`` and the process group's abort that follows."""
    training = d.training
    vendor, direction = (129, "Send") if status == 12 else (249, "Recv")
    opcode = 0 if status == 12 else d.rng.randrange(32000, 32768)
    gid = f"::ffff:{training.ips[rank.node]}"
    peer_ip = training.ips[peer.node]
    warning = (
        f"NET/IB : Got completion from peer {peer_ip}<{d.rng.randrange(32768, 60999)}> with status={status} "
        f"opcode={opcode} len={0 if status == 12 else opcode + 3} vendor err {vendor} ({direction}) localGid {gid} "
        f"remoteGids::ffff:{peer_ip}"
    )
    thread = d.rng.randrange(100, 400)
    training.nccl(rank, moment, "WARN", warning, thread=thread, source="transport/net_ib.cc:1696")
    training.nccl(rank, moment, "INFO", "transport/net.cc:1298 -> 6", thread=thread)
    training.nccl(rank, moment, "INFO", "proxy.cc:874 -> 6 [Progress Thread]", thread=thread)
    later = d.after(moment, 0.5, 2.5)
    pg = pytorch.PG.format(rank=rank.number)
    what = (
        f"{pg} Process group watchdog thread terminated with exception: NCCL error: remote process exited or there "
        f"was a network error, NCCL version {NCCL_VERSION}"
    )
    training.c10(rank, later, "E", "ProcessGroupNCCL.cpp:1895", what)
    training.print(
        rank,
        later,
        "ncclRemoteError: A call failed possibly due to a network error or a remote process exiting prematurely.",
        "Last error:",
        warning,
        "terminate called after throwing an instance of 'c10::DistBackendError'",
        f"  what():  {what}",
    )
    training.end(rank, later + timedelta(milliseconds=d.rng.randrange(50, 300)), -6)


def _link_fails(d: BundleDraft, fault: datetime, rail: int, line: str) -> None:
    """The culprit's rail loses its link at ``fault`` (the kernel's ``line``): NCCL errors follow on that rail
    (GPU ``rail`` uses NIC ``rail``), then the cascade."""
    training = d.training
    d.kernel(d.culprit, fault, line)
    failing = d.rank(d.culprit, rail)
    retries_out = d.after(fault, 12, 35)
    peers = [r for r in training.ranks if r.local == rail and r.node != d.culprit]
    if training.is_alive(failing, retries_out):
        _completion_error(d, failing, retries_out, d.rng.choice(peers), 12)
    for peer in peers:
        moment = d.after(retries_out, 0.5, 4)
        if training.is_alive(peer, moment):
            _completion_error(d, peer, moment, failing, 5)
    d.cascade(fault)
    d.failed()


def ib_port_down(d: BundleDraft) -> tuple[str, ...]:
    """An InfiniBand port goes down (``mlx5_N: Port: 1 Link DOWN``)."""
    fault = d.trains_for(15, 300)
    rail = d.rng.randrange(len(d.site.nics))
    pci, device, _ = d.site.nics[rail]
    if d.rng.random() < 0.4:
        d.kernel(
            d.culprit,
            fault - timedelta(milliseconds=d.rng.randrange(5, 40)),
            f"mlx5_core {pci}: Port module event: module {rail}, Cable unplugged",
        )
    d.counter("node_infiniband_link_downed_total", "node_infiniband_link_downed_total", {(d.culprit, rail): fault})
    _link_fails(d, fault, rail, f"mlx5_core {pci} {device}: Port: 1 Link DOWN")
    return (d.culprit,)


def roce_link_down(d: BundleDraft) -> tuple[str, ...]:
    """A RoCE NIC's Ethernet link goes down (``mlx5_core ... eth3: Link down``) and flaps back minutes later."""
    fault = d.trains_for(15, 300)
    rail = d.rng.randrange(len(d.site.nics))
    pci, _, netdev = d.site.nics[rail]
    d.kernel(d.culprit, d.after(fault, 60, 200), f"mlx5_core {pci} {netdev}: Link up")
    _link_fails(d, fault, rail, f"mlx5_core {pci} {netdev}: Link down")
    return (d.culprit,)
