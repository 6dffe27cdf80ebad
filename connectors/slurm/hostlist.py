"""Slurm hostlist expressions (``node[01-04,07]``, ``rack[1-2]-gpu[1-2]``, ``a1,b[3-4]``) as node names."""

from __future__ import annotations

import re

from connectors.base import ConnectorError

RANGE = re.compile(r"^(\d+)(?:-(\d+))?$")
MAX_NODES = 100_000


def expand_hostlist(expression: str) -> list[str]:
    """The node names of a hostlist expression, in order; ranges keep the zero padding of their start."""
    names: list[str] = []
    for part in _split_top_level(expression.strip()):
        names.extend(_expand(part, expression))
        if len(names) > MAX_NODES:
            raise ConnectorError(f"hostlist {expression[:80]!r} expands to more than {MAX_NODES} nodes", permanent=True)
    return list(dict.fromkeys(names))


def _split_top_level(expression: str) -> list[str]:
    parts, depth, current = [], 0, []
    for char in expression:
        if char == "[":
            depth += 1
        elif char == "]":
            depth -= 1
        if char == "," and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
    parts.append("".join(current))
    return [part.strip() for part in parts if part.strip()]


def _expand(part: str, expression: str) -> list[str]:
    opening = part.find("[")
    if opening == -1:
        if "]" in part:
            raise ConnectorError(f"hostlist {expression!r}: unbalanced ']'", permanent=True)
        return [part]
    closing = part.find("]", opening)
    if closing == -1:
        raise ConnectorError(f"hostlist {expression!r}: unbalanced '['", permanent=True)
    prefix, body, rest = part[:opening], part[opening + 1 : closing], part[closing + 1 :]
    suffixes = _expand(rest, expression) if rest else [""]
    names = []
    for item in body.split(","):
        match = RANGE.match(item.strip())
        if not match:
            raise ConnectorError(f"hostlist {expression!r}: {item!r} is not a number or range", permanent=True)
        low, high = match.group(1), match.group(2) or match.group(1)
        if int(high) < int(low):
            raise ConnectorError(f"hostlist {expression!r}: range {item!r} runs backwards", permanent=True)
        if int(high) - int(low) > MAX_NODES:
            raise ConnectorError(f"hostlist {expression!r}: range {item!r} is too large", permanent=True)
        width = len(low)
        for number in range(int(low), int(high) + 1):
            names.extend(f"{prefix}{number:0{width}d}{suffix}" for suffix in suffixes)
    return names
