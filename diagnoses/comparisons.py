"""What changed between an attempt and the last good (succeeded) attempt of its job: the nodes added and removed,
the software versions read from the logs and the attempt's record (driver, CUDA, NCCL, PyTorch, the container image,
``NCCL_*`` environment variables), the training step each reached and the time to the first error, and the log
templates of this attempt that the good one never printed (mined as the leads mine them, ``leads.mine_attempt``).
Pure functions over the two bundles' contexts; ``diagnoses.selectors.attempt_changes`` reads the bundles and calls
them."""

from __future__ import annotations

import re

from engine.context import ENVIRONMENT_PREFIXES, AttemptContext
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
HEAD_BYTES = 256 * 1024  # versions are printed as a program starts: the head of each stream is read
TOTAL_BYTES = 32 * 1024 * 1024  # and no more than this of a whole attempt
NEW_TEMPLATES = 20  # shown at most
LINE_CAP = 2000  # characters kept of a line shown
# A training loop's step lines, as the progress rules know them (rules/packs/default/progress.yaml, whose sources
# give each format): the step, and the number of steps planned where the line gives it.
STEP_LINES = (
    re.compile(rb"\biteration\s+(\d+)/\s*(\d+) \|"),  # Megatron-LM
    re.compile(rb"\bstep=(\d+), skipped=\d+, lr="),  # DeepSpeed
    re.compile(rb"\bstep:\s*(\d+)\s+(?:\x1b\[[0-9;]*m)?loss:"),  # torchtitan
    re.compile(rb"(?m)^iter (\d+): loss [\d.]+"),  # nanoGPT
    re.compile(rb"\bcompleted step: (\d+), seconds: [\d.]+"),  # MaxText
    re.compile(rb"(?i)\b(?:step|iter|iteration)\b\W{0,3}(\d+)(?:/(\d+))?\b[^\n]{0,60}?\bloss\b"),  # a script's own
)
TAIL_BLOCK = 1 << 20  # an application stream is read from its end, a block at a time,
TAIL_BYTES = 16 << 20  # until a step line is found or this much was read


def software(context: AttemptContext) -> dict[str, str]:
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
    if context.attempt.image:
        found.setdefault("image", set()).add(context.attempt.image)
    for name, value in context.attempt.environment.items():
        if name.startswith(ENVIRONMENT_PREFIXES):
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


def step_reached(context: AttemptContext) -> dict | None:
    """The last training step the attempt's application output reports (the highest of its streams' last step lines):
    ``step``, ``of`` (the steps planned, None when the line does not say), and the line (``ref``, ``text``); None
    when no stream has a step line in its last ``TAIL_BYTES``."""
    best = None
    for stream in context.streams:
        if stream.kind != "app":
            continue
        with stream.opener() as handle:
            found = _last_step(handle)
        if found is not None and (best is None or found[0] > best[0]):
            step, of, line, text = found
            best = (step, of, f"{stream.ref}:{line}", text)
    if best is None:
        return None
    step, of, ref, text = best
    return {"step": step, "of": of, "ref": ref, "text": text}


def _last_step(handle) -> tuple[int, int | None, int, str] | None:
    """(step, steps planned, line number, line) of the stream's last step line within its last ``TAIL_BYTES``."""
    if not handle.seekable():
        return None
    end = handle.seek(0, 2)
    stop = max(0, end - TAIL_BYTES)
    block_end = end
    while block_end > stop:
        start = max(stop, block_end - TAIL_BLOCK)
        handle.seek(start)
        block = handle.read(block_end - start)
        block_end = start
        if start > 0:  # begin at a whole line: the part before the first line end is read with the next block
            cut = block.find(b"\n") + 1
            if 0 < cut < len(block):
                block_end = start + cut
            start, block = start + cut, block[cut:]  # (a line longer than a block is not read)
        last = max((m for pattern in STEP_LINES for m in [*pattern.finditer(block)][-1:]), key=lambda m: m.start(),
                   default=None)  # fmt: skip
        if last is not None:
            begin = block.rfind(b"\n", 0, last.start()) + 1
            close = block.find(b"\n", last.end())
            text = block[begin : close if close >= 0 else len(block)].decode("utf-8", "replace").strip()
            line = _lines_before(handle, start) + block.count(b"\n", 0, begin) + 1
            of = int(last.group(2)) if last.re.groups > 1 and last.group(2) else None
            return int(last.group(1)), of, line, text[:LINE_CAP]
    return None


def _lines_before(handle, offset: int) -> int:
    """How many lines end before ``offset``."""
    handle.seek(0)
    count = 0
    while offset > 0 and (chunk := handle.read(min(offset, TAIL_BLOCK * 8))):
        count += chunk.count(b"\n")
        offset -= len(chunk)
    return count


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


def compare(now: AttemptContext, good: AttemptContext) -> dict:
    """What changed from ``good`` to ``now`` (the nodes, the software, the step reached, the time to the first error,
    the templates)."""
    mined_now, mined_good = mine_attempt(now), mine_attempt(good)
    nodes_now, nodes_good = set(now.attempt.nodes), set(good.attempt.nodes)
    return {
        "nodes": {
            "added": sorted(nodes_now - nodes_good),
            "removed": sorted(nodes_good - nodes_now),
            "kept": len(nodes_now & nodes_good),
        },
        "software": software_changes(software(good), software(now)),
        "step": {"now": step_reached(now), "good": step_reached(good)},
        "first_error": {"now": first_error(now, mined_now), "good": first_error(good, mined_good)},
        "new_templates": new_templates(mined_now, mined_good),
    }
