"""A hang with no evidence of its cause: the honest outcome is ``unattributed``."""

from __future__ import annotations

from datetime import timedelta

from demo.draft import BundleDraft


def nccl_timeouts_only(d: BundleDraft) -> tuple[str, ...]:
    """One rank falls behind into an earlier collective and stays there; every rank's watchdog fires,
    but no log says why (no Xid, no link event, no exception)."""
    fault = d.trains_for(20, 300)
    straggler = d.rng.choice(d.training.ranks)
    seq, op, numel = d.training.collective()
    d.cascade(fault, spare=(straggler,))
    moment = fault + timedelta(seconds=600, milliseconds=d.rng.randrange(0, 300))
    if d.training.is_alive(straggler, moment):
        d.training.watchdog_timeout(straggler, moment, seq - 1, op, numel)
    d.failed()
    return ()
