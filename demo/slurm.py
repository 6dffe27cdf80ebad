"""Slurm's compact notations for lists of hosts and tasks."""

from __future__ import annotations


def runs(numbers: list[int]) -> list[list[int]]:
    """Consecutive runs of the sorted ``numbers``: [1, 2, 3, 7] -> [[1, 2, 3], [7]]."""
    out: list[list[int]] = []
    for number in sorted(numbers):
        if out and number == out[-1][-1] + 1:
            out[-1].append(number)
        else:
            out.append([number])
    return out


def hostlist(nodes: tuple[str, ...]) -> str:
    """A hostlist: ``dgx-b200-[0417-0420,0422]`` (names that end in no number stay listed)."""
    groups: dict[tuple[str, int], list[int]] = {}
    plain: list[str] = []
    for node in nodes:
        stem = node.rstrip("0123456789")
        digits = node[len(stem) :]
        if digits:
            groups.setdefault((stem, len(digits)), []).append(int(digits))
        else:
            plain.append(node)
    parts = []
    for (stem, width), numbers in groups.items():
        ranges = ",".join(
            f"{run[0]:0{width}d}-{run[-1]:0{width}d}" if len(run) > 1 else f"{run[0]:0{width}d}"
            for run in runs(numbers)
        )
        parts.append(f"{stem}[{ranges}]" if len(numbers) > 1 else f"{stem}{ranges}")
    return ",".join(parts + plain)


def task_list(numbers: list[int]) -> str:
    """srun's task list: ``task 3`` or ``tasks 0-2,4-7``."""
    text = ",".join(f"{run[0]}-{run[-1]}" if len(run) > 1 else f"{run[0]}" for run in runs(numbers))
    return f"task {text}" if len(numbers) == 1 else f"tasks {text}"
