"""The one taxonomy (docs/diagnosis.md, "Taxonomy"): domains and their default subdomains.

Rule authors may add subdomains under a known domain (``gpu.memory.hbm``, ``filesystem.weka``):
a subdomain is accepted when it, or a dot-prefix of it, is listed here.
"""

DOMAINS: dict[str, tuple[str, ...]] = {
    "hardware": (
        "gpu", "gpu.memory", "gpu.nvlink", "gpu.bus", "gpu.firmware", "gpu.thermal", "nvswitch",
        "host.memory", "host.cpu", "host.kernel",
    ),
    "network": ("link.infiniband", "link.roce", "link.ethernet", "switch"),
    "storage": ("filesystem", "capacity", "io"),
    "software": ("driver", "fabric_manager", "nccl", "framework", "container"),
    "application": (
        "exception", "cuda_error", "cuda_oom", "host_oom", "numerics", "config", "collective_mismatch",
    ),
    "infrastructure": ("node_lost", "node_not_ready", "maintenance"),
    "scheduler": ("time_limit", "preemption", "cancelled", "eviction", "admission"),
}  # fmt: skip

OUTCOMES = ("attributed", "ambiguous", "unattributed")


def subdomain_known(domain: str, subdomain: str) -> bool:
    """True when ``subdomain`` (or one of its dot-prefixes) is a default subdomain of ``domain``."""
    return _listed(DOMAINS, domain, subdomain)


# Causes that lie on particular nodes (a node's GPU, host, NIC or driver, a node lost): a verdict naming one of
# these as the root cause names its nodes too. The rest may belong to the whole job (a time limit, a switch, a
# shared filesystem).
NODE_LEVEL: dict[str, tuple[str, ...]] = {
    "hardware": DOMAINS["hardware"],
    "network": ("link.infiniband", "link.roce", "link.ethernet"),
    "software": ("driver",),
    "infrastructure": ("node_lost", "node_not_ready"),
}


def node_level(domain: str, subdomain: str) -> bool:
    """True when a cause in ``domain`` / ``subdomain`` (or a dot-prefix of it) lies on particular nodes."""
    return _listed(NODE_LEVEL, domain, subdomain)


def _listed(table: dict[str, tuple[str, ...]], domain: str, subdomain: str) -> bool:
    known = table.get(domain, ())
    parts = subdomain.split(".")
    return any(".".join(parts[:i]) in known for i in range(len(parts), 0, -1))
