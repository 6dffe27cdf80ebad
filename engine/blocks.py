"""Reading a log stream in blocks of whole lines, and the prefilter's matches grouped by line.

A block is read without copying where the stream can seek; a line longer than the limit is cut there and
counted, and the lines after it are read as usual. Memory stays bounded whatever the size of a stream.
"""

from __future__ import annotations

BLOCK_BYTES = 8 << 20  # a line is cut at the larger of this and Limits.line_bytes


def blocks(handle, line_bytes: int, stat):
    """(data, end) pairs: ``data[:end]`` holds whole lines. A line longer than ``line_bytes`` (at least a
    block) is cut: its first ``line_bytes`` come as a line, the rest up to its newline is skipped and
    ``stat.cut`` counts it; the lines after it are read as usual.

    A seekable stream is read without copying: the partial last line is read again with the next block.
    """
    line_bytes = max(line_bytes, BLOCK_BYTES)
    seekable = handle.seekable()
    carry = b""
    skipping = False  # inside a cut line
    while True:
        data = handle.read(BLOCK_BYTES)
        if skipping and data:
            newline = data.find(b"\n")
            if newline == -1:
                continue
            data, skipping = data[newline + 1 :], False
            if not data:
                continue
        block, carry = (carry + data if carry else data), b""
        if not block:
            return
        if not data:  # the end of the stream: what is left is its last line
            yield block, len(block)
            return
        cut = block.rfind(b"\n") + 1
        if cut == 0:  # no line ends in this block
            if len(block) >= line_bytes:
                stat.cut += 1
                skipping = True
                yield block[:line_bytes] + b"\n", line_bytes + 1
            else:
                carry = block  # keep reading until the line ends or reaches line_bytes
            continue
        if cut < len(block):
            if seekable:
                handle.seek(cut - len(block), 1)
            else:
                carry = block[cut:]
        yield block, cut


def group(hits: list[tuple[int, int]]):
    """(line start, [pattern ids]) from sorted (line start, pattern id) pairs."""
    current, pids = -1, []
    for start, pid in hits:
        if start != current:
            if pids:
                yield current, pids
            current, pids = start, []
        pids.append(pid)
    if pids:
        yield current, pids


def lines_back(block: bytes, apart: list[int], width: int):
    """(line start, [pattern ids]) of ``Prefilter.scan_apart``'s apart matches, last line first."""
    line_start, pids = 0, []
    for value in reversed(apart):
        offset, pid = divmod(value, width)
        if pids and offset >= line_start:  # another match on the same line
            if pid not in pids:
                pids.append(pid)
            continue
        if pids:
            yield line_start, pids if len(pids) == 1 else sorted(pids)
        line_start, pids = block.rfind(b"\n", 0, offset) + 1, [pid]
    if pids:
        yield line_start, pids if len(pids) == 1 else sorted(pids)


def decode(raw: bytes) -> str:
    return raw.decode("utf-8", "replace").rstrip("\r")
