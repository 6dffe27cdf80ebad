"""A hostile set of uploads: bundles (.tar.gz bodies) that are broken, oversized, deep, odd or malicious.

Each case is ``Case(name, body, expect)``: ``expect`` is "reject" (a 4xx naming the problem), "accept" (stored
and analysed) or "either" (a 4xx or an acceptance; never a 5xx). The API's test posts each one to both
upload endpoints; the pages' test stores those accepted and renders every page for each. Sizes are kept
small: ``LIMITS`` are the settings the set is posted under (the limits they exercise, scaled down).
"""

from __future__ import annotations

import gzip
import io
import json
import tarfile
from dataclasses import dataclass

START, END = "2026-11-02T10:00:00Z", "2026-11-02T11:00:00Z"
XID = (
    b"Nov  2 10:20:01 node02 kernel: [ 1234.567890] NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', GPU off the bus\n"
)
LIMITS = {
    "FAULTLINE_BUNDLE_MAX_BYTES": 12 << 20,
    "FAULTLINE_BUNDLE_MAX_FILES": 200,
    "FAULTLINE_BUNDLE_MAX_NAME": 1024,
    "FAULTLINE_JSON_MAX_BYTES": 1 << 20,
    "FAULTLINE_JSON_MAX_DEPTH": 32,
    "FAULTLINE_EVENTS_MAX": 1000,
    "FAULTLINE_SERIES_MAX": 100,
    "FAULTLINE_NODES_MAX": 1000,
    "FAULTLINE_RANKS_MAX": 1 << 20,
}


@dataclass(frozen=True)
class Case:
    name: str
    body: bytes
    expect: str


def record(job_id: str, **fields) -> dict:
    base = {"cluster": "hostile", "scheduler": "slurm", "job_id": job_id, "attempt": 0, "nodes": ["node01", "node02"],
            "start": START, "end": END, "state": "FAILED", "exit_code": "1:0"}  # fmt: skip
    return {**base, **fields}


def member(name: str, size: int = 0, kind: bytes = tarfile.REGTYPE, **extra) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.size, info.type, info.mtime = size, kind, 1_700_000_000
    for key, value in extra.items():
        setattr(info, key, value)
    return info


def archive(members, *, level: int = 6) -> bytes:
    """A .tar.gz of ``members``: (name, bytes | JSON-able) or (TarInfo, bytes | None)."""
    buffer = io.BytesIO()
    with (
        gzip.GzipFile(fileobj=buffer, mode="wb", compresslevel=level, mtime=0) as packed,
        tarfile.open(fileobj=packed, mode="w|", format=tarfile.PAX_FORMAT) as tar,
    ):
        for item, data in members:
            if isinstance(item, str):
                data = data if isinstance(data, bytes) else json.dumps(data).encode()
                item = member(item, len(data))
            tar.addfile(item, io.BytesIO(data) if data is not None else None)
    return buffer.getvalue()


def valid(job_id: str, *extra, **fields) -> bytes:
    return archive([("attempt.json", record(job_id, **fields)), ("logs/node02/syslog.log", XID), *extra])


def raw_attempt(job_id: str, text: str) -> bytes:
    return archive([("attempt.json", text.encode()), ("logs/node02/syslog.log", XID)])


def cases() -> list[Case]:
    out: list[Case] = []

    def add(name: str, body: bytes, expect: str) -> None:
        out.append(Case(name, body, expect))

    good = valid("h-valid")
    # transport and compression
    add("not-gzip", b"this is not a gzip file\n" * 100, "reject")
    add("empty-body", b"", "reject")
    add("truncated-gzip", good[: len(good) // 2], "reject")
    add("gzip-not-tar", gzip.compress(b"just some text\n" * 1000), "reject")
    plain = io.BytesIO()
    with tarfile.open(fileobj=plain, mode="w") as tar:
        data = json.dumps(record("h-rawtar")).encode()
        tar.addfile(member("attempt.json", len(data)), io.BytesIO(data))
    add("tar-uncompressed", plain.getvalue(), "reject")
    add("gzip-trailing-garbage", valid("h-trailing") + bytes(range(256)) * 16, "either")
    inner = gzip.decompress(valid("h-twomembers"))
    add("gzip-two-members", gzip.compress(inner[:700]) + gzip.compress(inner[700:]), "either")
    add("no-end-marker", gzip.compress(gzip.decompress(valid("h-noend"))[: -1024 * 9]), "either")
    # sizes past the (scaled) limits
    add(
        "expands-past-the-limit",
        archive(
            [("attempt.json", record("h-bomb")), (member("logs/node01/syslog.log", 13 << 20), bytes(13 << 20))], level=9
        ),
        "reject",
    )
    add(
        "members-past-the-limit",
        archive([("attempt.json", record("h-files")), *[(f"logs/node01/f{i:04d}.log", b"x\n") for i in range(250)]]),
        "reject",
    )
    add("member-name-past-the-limit", valid("h-longpath", ("logs/" + "d/" * 600 + "x.log", XID)), "reject")
    add("file-name-300", valid("h-longname", ("logs/node02/" + "s" * 296 + ".log", XID)), "reject")
    add("stream-name-200", valid("h-longstream", ("logs/node02/" + "k" * 200 + ".log", XID)), "accept")
    add("dirs-200-deep", valid("h-deep", ("logs/" + "/".join(f"d{i}" for i in range(200)) + "/x.log", XID)), "either")
    add(
        "line-9MiB-unterminated",
        valid("h-line9u", (member("logs/node01/app.log", 9 << 20), b"A" * (9 << 20))),
        "accept",
    )
    add("line-9MiB-terminated", valid("h-line9t", ("logs/node01/app.log", b"A" * (9 << 20) + b"\n")), "accept")
    add(
        "line-long-before-the-evidence",
        archive(
            [("attempt.json", record("h-lineev")), ("logs/node02/syslog.log", b"B" * (10 << 20) + b"\n" + XID)], level=9
        ),
        "accept",
    )
    # member kinds and paths
    add("dotdot-path", valid("h-dd", (member("../escape.txt", 3), b"pwn")), "reject")
    add("dotdot-inner", valid("h-dd2", (member("logs/../../escape.txt", 3), b"pwn")), "reject")
    add("absolute-path", valid("h-abs", (member("/tmp/abs-escape.txt", 3), b"pwn")), "reject")
    add("backslash-path", valid("h-bs", (member("..\\..\\escape.txt", 3), b"pwn")), "reject")
    add(
        "symlink-absolute",
        valid("h-sl1", (member("logs/node01/x.log", kind=tarfile.SYMTYPE, linkname="/etc/passwd"), None)),
        "reject",
    )
    add(
        "symlink-relative",
        valid("h-sl2", (member("logs/up", kind=tarfile.SYMTYPE, linkname="../../../etc"), None)),
        "reject",
    )
    add(
        "hardlink-outside",
        valid("h-hl1", (member("logs/node01/x.log", kind=tarfile.LNKTYPE, linkname="/etc/passwd"), None)),
        "reject",
    )
    add(
        "hardlink-inside",
        valid("h-hl2", (member("logs/node01/x.log", kind=tarfile.LNKTYPE, linkname="attempt.json"), None)),
        "reject",
    )
    add(
        "char-device",
        valid("h-chr", (member("logs/node01/null", kind=tarfile.CHRTYPE, devmajor=1, devminor=3), None)),
        "reject",
    )
    add(
        "block-device",
        valid("h-blk", (member("logs/node01/loop", kind=tarfile.BLKTYPE, devmajor=7, devminor=0), None)),
        "reject",
    )
    add("fifo", valid("h-fifo", (member("logs/node01/pipe", kind=tarfile.FIFOTYPE), None)), "reject")
    add("file-then-dir-same-name", valid("h-filedir", ("logs/node01", b"x"), ("logs/node01/syslog.log", XID)), "reject")
    add("dir-then-file-same-name", valid("h-dirfile", ("logs/node01/syslog.log", XID), ("logs/node01", b"x")), "reject")
    add(
        "duplicate-attempt-json",
        archive([("attempt.json", record("h-dup1")), ("attempt.json", record("h-dup1b"))]),
        "reject",
    )
    add("duplicate-log", valid("h-dup2", ("logs/node02/syslog.log", b"x\n")), "reject")
    add("nul-in-member-name", valid("h-nulname", ("logs/node01/a\x00b.log", XID)), "either")
    # contents
    nul_line = b"Nov  2 10:00:01 node01 kernel: a\x00b\x00 NVRM: Xid (PCI:0000:3b:00): 79, \x00\n"
    add("nul-bytes", valid("h-nul", ("logs/node01/syslog.log", nul_line * 200)), "accept")
    add(
        "invalid-utf8",
        valid("h-utf8", ("logs/node01/syslog.log", b"\xff\xfe bad \xc3\x28\n\xed\xa0\x80 more\n" * 500)),
        "accept",
    )
    add(
        "logs-all-empty",
        archive(
            [
                ("attempt.json", record("h-empty")),
                ("logs/node01/syslog.log", b""),
                ("logs/node02/syslog.log", b""),
                ("logs/train.log", b""),
            ]
        ),
        "accept",
    )
    add(
        "host-with-slash-in-a-log",
        valid("h-loghost", ("logs/train.log", b"srun: error: Node failure on a/b/../c\n")),
        "accept",
    )
    add("host-nul-in-a-log", valid("h-lognul", ("logs/train.log", b"srun: error: Node failure on x\x00y\n")), "accept")
    add(
        "host-300-in-a-log",
        valid("h-log300", ("logs/train.log", b"srun: error: Node failure on " + b"h" * 300 + b"\n")),
        "accept",
    )
    add("metrics-nested-10k", valid("h-mnest", ("metrics/dcgm.json", b"[" * 10000 + b"]" * 10000)), "accept")
    matrix = b'{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[["x","y"]]}]}}'
    odd = (("metrics/dcgm.json", b"[1, 2, 3]"), ("metrics/ib.json", b'"x"'), ("metrics/x.json", matrix))
    add("metrics-not-prometheus", valid("h-mshape", *odd), "accept")
    add(
        "metrics-past-the-size",
        valid("h-msize", ("metrics/big.json", b'{"pad": "' + b"x" * (2 << 20) + b'"}')),
        "accept",
    )
    add("events-nested-10k", valid("h-enest", ("events/k8s.json", b"[" * 10000 + b"]" * 10000)), "accept")
    add("events-not-list", valid("h-eobj", ("events/k8s.json", b'{"oops": 1}')), "accept")
    many = [{"time": START, "node": "node01", "reason": "BackOff", "message": f"m{i}"} for i in range(3000)]
    add("events-past-the-count", valid("h-ecount", ("events/k8s.json", many)), "accept")
    add("events-bad-fields", valid("h-efields", ("events/k8s.json", [{"time": "yesterday", "node": 3}])), "accept")
    add("sources-broken", valid("h-sources", ("sources.json", b'[{"name": 1}]')), "accept")
    add("flight-recorder-garbage", valid("h-fr", ("traces/flight_recorder/rank_0", b"\x80\x04garbage")), "accept")
    # attempt.json
    add("attempt-missing", archive([("logs/node02/syslog.log", XID)]), "reject")
    add("attempt-not-json", raw_attempt("h-nj", "{nodes: [node01"), "reject")
    add("attempt-binary", archive([("attempt.json", bytes(range(256)) * 16)]), "reject")
    add("attempt-array", raw_attempt("h-arr", "[1,2,3]"), "reject")
    add("attempt-wrong-types", valid("h-types", nodes="node01", start=12), "reject")
    add("attempt-unknown-field", valid("h-unknown", colour="red"), "reject")
    add("attempt-end-before-start", valid("h-order", start=END, end=START), "reject")
    add("attempt-bad-timezone", valid("h-tz", timezone="Mars/Olympus"), "reject")
    add("attempt-nested-10k", raw_attempt("h-nest", '{"cluster": ' + "[" * 10000 + "]" * 10000 + "}"), "reject")
    add("attempt-nested-40", valid("h-nest40", reason=json.loads("[" * 40 + "]" * 40)), "reject")
    add("attempt-past-the-size", valid("h-pad", reason="r" * (2 << 20)), "reject")
    huge = json.dumps(record("h-huge")).replace('"attempt": 0', '"attempt": 1' + "0" * 30)
    add("attempt-number-1e30", raw_attempt("h-huge", huge), "reject")
    add("attempt-number-2e31", valid("h-int32", attempt=2**31), "reject")
    add("attempt-number-negative", valid("h-neg", attempt=-1), "reject")
    add("attempt-number-float", valid("h-float", attempt=1.5), "reject")
    add("attempt-number-bool", valid("h-bool", attempt=True), "reject")
    add("tasks-per-node-1e8", valid("h-tpn", nodes=["n1", "n2", "n3", "n4"], tasks_per_node=100_000_000), "reject")
    add("tasks-per-node-zero", valid("h-tpn0", tasks_per_node=0), "reject")
    add("ranks-huge-key", valid("h-rkey", ranks={"9" * 5000: "node01"}), "reject")
    add("ranks-not-object", valid("h-rlist", ranks=["node01"]), "reject")
    add("name-10MB", valid("h-name10m", name="x" * (10 << 20)), "reject")
    add("name-256", valid("h-name256", name="x" * 256), "reject")
    add("name-255", valid("h-name255", name="x" * 255), "accept")
    add("user-300", valid("h-user300", user="u" * 300), "reject")
    add("cluster-150", valid("h-cl150", cluster="c" * 150), "reject")
    add("job-id-150", valid("j" * 150), "reject")
    add("state-100", valid("h-state100", state="S" * 100), "reject")
    add("exit-code-100", valid("h-exit100", exit_code="1" * 100), "reject")
    add("node-name-300", valid("h-node300", nodes=["n" * 300]), "reject")
    add("nodes-past-the-count", valid("h-nodes", nodes=[f"n{i:05d}" for i in range(1001)]), "reject")
    add("nodes-empty-list", valid("h-nonodes", nodes=[]), "reject")
    add("nodes-blank-name", valid("h-blank", nodes=["  "]), "reject")
    add("cluster-with-slash", valid("h-clslash", cluster="x/y"), "reject")
    add("nul-in-user", valid("h-nuluser", user="a\x00b"), "reject")
    add("lone-surrogate", raw_attempt("h-surr", json.dumps(record("h-surr")).replace('"1:0"', '"\\ud800"')), "reject")
    add("node-dotdot", valid("h-nodedd", nodes=["../../etc", "a/b", "node02"]), "accept")
    add("node-html", valid("h-nodehtml", nodes=["<img src=x onerror=alert(1)>", "node02"]), "accept")
    add("node-unicode", valid("h-nodeuni", nodes=["nœud-é", "节点", "node02"]), "accept")
    add("job-id-odd", valid("../../<b>#1?x=1"), "accept")
    add("user-html", valid("h-userhtml", user="<script>alert(1)</script>", name="{{ 7*7 }} {% now 'Y' %}"), "accept")
    add("reason-long", valid("h-reason", reason="why " * 50_000), "accept")
    add("scheduler-unknown", valid("h-sched", scheduler="pbs"), "reject")
    add("start-not-a-time", valid("h-start", start="soon"), "reject")
    add("start-no-zone", valid("h-nozone", start="2026-11-02T10:00:00"), "reject")
    add("state-empty", valid("h-stempty", state=""), "reject")
    add("exit-code-int", valid("h-exitint", exit_code=137), "accept")
    add("job-id-int", valid(12345), "accept")
    add("years-apart", valid("h-years", start="1970-01-01T00:00:00Z", end="9999-12-31T23:59:59Z"), "accept")
    return out
