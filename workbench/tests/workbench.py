"""What the rule workbench's tests share: a thermal rule and the demo bundle it is written for.

The thermal rule is the one the demo's ``gpu-thermal-slowdown`` kind needs: the default pack leaves
that attempt unattributed (DCGM health warnings are its only cause lines).
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from demo.bundles import KINDS
from demo.sites import DGX_B200

THERMAL_RULE = r"""
---
rules:
  - id: site.gpu.thermal
    description: DCGM's health watch saw a GPU slow its clocks for a thermal violation
    streams: [system]
    pattern: 'nv-hostengine\[\d+\]: .*Detected clocks event due to thermal violation in GPU (?P<gpu>\d+)'
    role: cause
    domain: hardware
    subdomain: gpu.thermal
    action: CHECK_COOLING
    precedence: 80
    summary: GPU {gpu} of {node} slowed down for a thermal violation
    explains:
      - {tags: [nccl.cascade, teardown, gpu.app_error, app.exception], within: 3h, before: 2m}
"""
HOT_NODE = "dgx-b200-0418"  # the thermal bundle's overheating GPU is on this node
THERMAL_LINE = (
    "Nov 22 16:09:46 dgx-b200-0418 nv-hostengine[2947]: ERROR [2947:2983] [[Health]] Detected a WARNING in "
    "health system Thermal: 'Detected clocks event due to thermal violation in GPU 3. Verify that the cooling on "
    "this machine is functional, including external, thermal material interface, fans, and any other components.'"
)


def thermal_bundle(directory: Path, seed: int = 7) -> Path:
    """The demo's thermal slowdown on the demo set's DGX B200 cluster (DCGM's warnings in each node's syslog)."""
    nodes = [f"dgx-b200-{n:04d}" for n in range(415, 419)]
    start = datetime(2026, 11, 22, 10, 0, tzinfo=UTC)
    kind = KINDS["gpu-thermal-slowdown"]
    return kind.write(
        directory,
        cluster="dgx-a",
        job_id="4187816",
        nodes=nodes,
        start=start,
        seed=seed,
        site=DGX_B200,
        culprit=HOT_NODE,
    ).path
