"""The names logs use for the attempt's nodes, and which node a line belongs to."""

from __future__ import annotations

from engine.normalise import Parsed


class NodeNames:
    """Maps the names logs use for hosts (short names, FQDNs) to the attempt's node names."""

    def __init__(self, nodes: tuple[str, ...]):
        self.nodes = set(nodes)
        self.short = {node.split(".")[0]: node for node in nodes}
        self.only = nodes[0] if len(nodes) == 1 else None

    def canonical(self, name: str | None) -> str | None:
        if not name:
            return None
        if name in self.nodes:
            return name
        return self.short.get(name.split(".")[0], name)

    def knows(self, name: str) -> bool:
        """Is ``name`` one of the attempt's nodes (by its full or short name)?"""
        return name in self.nodes or name.split(".")[0] in self.short

    def place(self, stream_node: str | None, parsed: Parsed, ranks: dict[int, str]) -> str | None:
        """The node a line belongs to: its stream's node, else its rank, host field or prefix; the workload
        output of a one-node attempt is that node's."""
        if stream_node is not None:
            return self.canonical(stream_node)
        if parsed.rank is not None and parsed.rank in ranks:
            return self.canonical(ranks[parsed.rank])
        return self.canonical(parsed.host) or self.only
