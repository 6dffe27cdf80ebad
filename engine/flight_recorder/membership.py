"""Which global ranks belong to each process group, from what the dumps record.

In order of trust:

1. `pg_config`: the group's name with its global ranks. ProcessGroupNCCL records every group it creates this way,
   whether or not the rank used it since ("recorded").
2. The default group (`default_pg`): ranks 0..world_size-1 ("world").
3. Gloo records every group under an empty name, each new group overwriting the last, so each rank's dump holds the
   ranks of the last group *it* created (torch 2.14: group-local, 0..n-1, so only its size; 2.13: the default
   group's global ranks, nothing for a subgroup). torch.distributed names groups by a counter every rank advances
   ("0", "1", ...: every rank creates every group, in the same order) and a rank creates only the groups it belongs
   to. So for the newest group that any dump holds entries of, a member's record is that group's, and a rank
   whose record has another size is no member. When the members seen (ranks with entries of the group) are fewer
   than its size, and exactly as many other ranks are left whose record allows it (or that left no dump), those
   are its members ("inferred"): the member that never arrived at the group's first collective is found.
4. The size a collective expects, where its shapes give it (all_gather's list of outputs, reduce_scatter's list of
   inputs, the ratio of the `_base` variants' sizes), feeds the same count.
5. Otherwise the ranks whose dumps hold entries of the group ("entries"): a member that never entered any of its
   collectives cannot be seen.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import prod

from engine.flight_recorder.dumps import Dump, Entry, GroupConfig

# op -> which side lists one tensor per member
_LISTS = {"all_gather": "output", "allgather": "output", "reduce_scatter": "input"}
# op -> (numerator, denominator): the group's size is numel(numerator) / numel(denominator)
_RATIOS = {
    "_allgather_base": ("output", "input"),
    "all_gather_into_tensor": ("output", "input"),
    "_reduce_scatter_base": ("input", "output"),
    "reduce_scatter_tensor": ("input", "output"),
}


@dataclass(frozen=True, slots=True)
class Membership:
    ranks: tuple[int, ...]
    source: str  # recorded | world | inferred | entries

    @property
    def known(self) -> bool:
        """Whether the members are known rather than only seen (group-local p2p ranks can then be placed)."""
        return self.source != "entries"


def memberships(
    by_rank: dict[int, Dump],
    entries: dict[str, dict[int, list[Entry]]],
    descs: dict[str, str],
    configs: dict[str, GroupConfig],
    world: int,
) -> dict[str, Membership]:
    """Every group's members (`entries`: group name -> rank -> its entries of the group)."""
    newest = max((int(name) for name in entries if name.isdigit()), default=None)
    out = {}
    for name in set(entries) | set(configs):
        if name in configs:
            out[name] = Membership(tuple(sorted(set(configs[name].ranks))), "recorded")
        elif descs.get(name) == "default_pg":
            out[name] = Membership(tuple(range(world)), "world")
        else:
            seen = tuple(sorted(entries.get(name, {})))
            inferred = _inferred(name, seen, newest, by_rank, entries.get(name, {}), world)
            out[name] = Membership(inferred, "inferred") if inferred else Membership(seen, "entries")
    return out


def _group_size(name: str, seen: tuple[int, ...], newest: int | None, by_rank, group_entries) -> int | None:
    """The group's size as its collectives' shapes give it, else (the newest group) as its members' records do."""
    for rank_entries in group_entries.values():
        for entry in rank_entries:
            size = _size_from_shapes(entry)
            if size:
                return size
    if newest is None or not name.isdigit() or int(name) != newest:
        return None
    sizes = {len(by_rank[rank].unnamed_ranks) for rank in seen if by_rank[rank].unnamed_ranks}
    return sizes.pop() if len(sizes) == 1 else None


def _inferred(name, seen, newest, by_rank, group_entries, world) -> tuple[int, ...] | None:
    """The members, seen and not, when the group's size and the ranks' records determine them; else None."""
    size = _group_size(name, seen, newest, by_rank, group_entries)
    if size is None or size <= len(seen) or newest is None or int(name) != newest:
        return None
    others = [rank for rank in range(world) if rank not in seen and _may_belong(by_rank.get(rank), size)]
    if len(others) != size - len(seen):
        return None
    return tuple(sorted((*seen, *others)))


def _may_belong(dump: Dump | None, size: int) -> bool:
    """Whether a rank not seen in the newest group may be one of its members: no dump, no usable record (2.13 records
    nothing for a subgroup), or a record of the group's size."""
    return dump is None or not dump.unnamed_ranks or len(dump.unnamed_ranks) == size


def _size_from_shapes(entry: Entry) -> int | None:
    op = entry.profiling_name.split(":", 1)[-1].split(" ", 1)[0]
    side = _LISTS.get(op)
    if side is not None:
        listed = entry.output_sizes if side == "output" else entry.input_sizes
        other = entry.input_sizes if side == "output" else entry.output_sizes
        return len(listed) if len(other) == 1 and len(listed) > 1 else None
    ratio = _RATIOS.get(op)
    if ratio is None:
        return None
    sides = {"input": entry.input_sizes, "output": entry.output_sizes}
    numerator, denominator = (sides[ratio[0]], sides[ratio[1]])
    if len(numerator) != 1 or len(denominator) != 1:
        return None
    top, bottom = prod(numerator[0]), prod(denominator[0])
    return top // bottom if bottom and top % bottom == 0 and top > bottom else None
