"""What changed between an attempt and the last good (succeeded) attempt of its job: the nodes added and removed,
the software versions read from the logs and the attempt's record (driver, CUDA, NCCL, PyTorch, the container image,
``NCCL_*`` environment variables), the time to the first error, and the log templates of this attempt that the good
one never printed (mined as the leads mine them, ``leads.mine_attempt``). Pure functions over the two bundles' contexts;
``diagnoses.selectors.attempt_changes`` reads the bundles and calls them."""

from __future__ import annotations

import re

from engine.context import AttemptContext
from leads import Mined, mine_attempt

SOFTWARE = ("driver", "CUDA", "NCCL", "PyTorch", "image")  # in this order, then environment variables by name
VERSION = r"(\d+\.\d+(?:\.\d+)?)"
PATTERNS = (
    ("NCCL", re.compile(r"\bNCCL version (\d+\.\d+\.\d+)")),
    ("CUDA", re.compile(r"\bNCCL version [\d.]+\+cuda(\d+\.\d+)")),
    ("CUDA", re.compile(rf"\bCUDA Version:?\s*{VERSION}")),
    ("driver", re.compile(rf"\bDriver Version:?\s*{VERSION}")),
    ("driver", re.compile(rf"NVRM: loaded NVIDIA .*?Kernel Module(?: for \S+)?\s+{VERSION}")),
    ("PyTorch", re.compile(r"\b(?:PyTorch|torch)(?: version)?(?::|==|\s)\s*v?(\d+\.\d+\.\d+(?:[+.][\w.]+)?)")),
    ("image", re.compile(r'[Cc]ontainer image "([^"\s]+)"')),
    ("image", re.compile(r"\bimporting (?:docker )?image:?\s+(\S+)")),
)
ENVIRONMENT = re.compile(r"\b((?:NCCL|TORCH_NCCL)_[A-Z0-9_]+)(?: set by environment to |=)([^\s,;'\"]+)")
ENVIRONMENT_PREFIXES = ("NCCL_", "TORCH_NCCL_", "CUDA_", "TORCH_")
HEAD_BYTES = 256 * 1024  # versions are printed as a program starts: the head of each stream is read
TOTAL_BYTES = 32 * 1024 * 1024  # and no more than this of a whole attempt
NEW_TEMPLATES = 20  # shown at most


def software(context: AttemptContext, record: dict) -> dict[str, str]:
    """The attempt's software versions and environment, by name; a value that differs between nodes lists every
    one, sorted."""
    found: dict[str, set[str]] = {}
    budget = TOTAL_BYTES
    for stream in context.streams:
        if budget <= 0:
            break
        with stream.opener() as handle:
            head = handle.read(min(HEAD_BYTES, budget))
        budget -= len(head)
        _scan(head.decode("utf-8", "replace"), found)
    for event in context.events:
        _scan(f"{event.reason}: {event.message}", found)
    image = record.get("image")
    if isinstance(image, str) and image:
        found.setdefault("image", set()).add(image)
    environment = record.get("environment")
    for name, value in (environment if isinstance(environment, dict) else {}).items():
        if name.startswith(ENVIRONMENT_PREFIXES) and isinstance(value, str):
            found.setdefault(name, set()).add(value)
    return {name: ", ".join(sorted(values)) for name, values in found.items()}


def _scan(text: str, found: dict[str, set[str]]) -> None:
    for name, pattern in PATTERNS:
        for match in pattern.finditer(text):
            found.setdefault(name, set()).add(match.group(1))
    for match in ENVIRONMENT.finditer(text):
        found.setdefault(match.group(1), set()).add(match.group(2))


def software_changes(good: dict[str, str], now: dict[str, str]) -> list[dict]:
    """Each name of either attempt with its value in the good one and in this one, the changed ones first."""
    order = {name: index for index, name in enumerate(SOFTWARE)}
    rows = [
        {"name": name, "good": good.get(name, ""), "now": now.get(name, ""), "changed": good.get(name) != now.get(name)}
        for name in set(good) | set(now)
    ]
    return sorted(rows, key=lambda row: (not row["changed"], order.get(row["name"], len(order)), row["name"]))


def first_error(context: AttemptContext, mined: Mined) -> float | None:
    """Seconds from the attempt's start to its first line with error-like wording (None without one)."""
    if mined.first_symptom is None:
        return None
    return round(mined.first_symptom - context.attempt.start.timestamp(), 3)


def new_templates(now: Mined, good: Mined) -> list[dict]:
    """The templates of this attempt that the good one never printed, in the order their first line came."""
    known = set(good.templates) | {template.text for template in good.templates.values()}
    fresh = [t for t in now.templates.values() if t.key not in known and t.text not in known and t.first is not None]
    fresh.sort(key=lambda template: template.first.key())
    return [
        {
            "key": template.key,
            "text": template.text,
            "lines": template.lines,
            "nodes": sorted(template.nodes),
            "first": {"ref": f"{template.first.file}:{template.first.line}", "text": template.first.text},
        }
        for template in fresh[:NEW_TEMPLATES]
    ]


def compare(now: AttemptContext, good: AttemptContext, *, now_record: dict, good_record: dict) -> dict:
    """What changed from ``good`` to ``now`` (the nodes, the software, the time to the first error, the templates)."""
    mined_now, mined_good = mine_attempt(now), mine_attempt(good)
    nodes_now, nodes_good = set(now.attempt.nodes), set(good.attempt.nodes)
    return {
        "nodes": {
            "added": sorted(nodes_now - nodes_good),
            "removed": sorted(nodes_good - nodes_now),
            "kept": len(nodes_now & nodes_good),
        },
        "software": software_changes(software(good, good_record), software(now, now_record)),
        "first_error": {"now": first_error(now, mined_now), "good": first_error(good, mined_good)},
        "new_templates": new_templates(mined_now, mined_good),
    }
