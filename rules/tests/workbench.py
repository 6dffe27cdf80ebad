"""What the rule workbench's tests share: stored attempts, people of each role, and a thermal rule.

The thermal rule is the one the demo's ``gpu-thermal-slowdown`` kind needs: the default pack leaves
that attempt unattributed (DCGM health warnings are its only cause lines).
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from django.contrib.auth.models import Group, User

from demo.bundles import KINDS
from demo.sites import DGX_B200
from diagnoses.models import Attempt
from diagnoses.services import attempts
from diagnoses.tests.bundles import START, write_bundle

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


def person(role: str | None, name: str = "", password: str = "x") -> User:
    user = User.objects.create_user(name or f"user-{role or 'none'}".replace(" ", "-"), password=password)
    if role:
        user.groups.add(Group.objects.get(name=role))
    return user


def thermal_bundle(directory: Path, seed: int = 7) -> Path:
    """The demo's thermal slowdown on the demo set's DGX B200 cluster (DCGM's warnings in each node's syslog)."""
    nodes = [f"dgx-b200-{n:04d}" for n in range(415, 419)]
    start = START + timedelta(days=20)
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


def store_attempts(root: Path) -> dict[str, Attempt]:
    """Three analysed attempts: a GPU off the bus (attributed), NCCL timeouts only (unattributed) and the
    demo's thermal slowdown (unattributed by the default pack). Their analyses run
    when the transaction commits."""
    bus = write_bundle(root / "bus", job_id="1")
    quiet = write_bundle(root / "quiet", job_id="2", faulty=None, start=START + timedelta(days=1))
    thermal = thermal_bundle(root / "thermal")
    stored = {}
    for label, path in (("bus", bus), ("quiet", quiet), ("thermal", thermal)):
        stored[label] = attempts.attempt_ingest_directory(path=path)
    return stored
