"""Flight Recorder benchmark: read and analyse the dumps of a 1,024-rank hang, beside merely loading the same files;
then the whole path an attempt takes, a bundle carrying those dumps read and diagnosed by the default pack's engine.

    python bench/flight_recorder.py [--ranks 1024] [--collectives 16] [--repeat 3]

Builds, in a temporary folder, a dump set from a real dump (engine/flight_recorder/tests/dumps/straggler/rank_0,
torch 2.13 with Gloo, stack frames included) as template: every rank with `--collectives` all_reduces of the default
group and the template's subgroup entry, one rank stopping one collective short, written once as pickles and once as
JSON in PyTorch's two flavours. Times `read_dump_dir` + `analyse` on each set and, in the same run, the standard
library's loaders (pickle.loads, json.loads) over the same files, which check nothing and build no typed objects;
prints the best of `--repeat` runs beside the target (1 s) and the ratio to the reference. The whole path:
`load_bundle` + `Engine.analyse` (the default pack, compiled beforehand) of a bundle of the 1,024 pickles on 128 nodes
of 8 ranks and a short log (every rank's watchdog timeout), beside the same bundle without its dumps, in the same run.
Last, what the dumps add to the attempt page: the summary the analysis records (its JSON as the database returns it)
decoded and rendered by pages/templates/pages/flight_recorder.html, for this set and for a worst case of every other
rank stuck (the longest rank ranges), beside the page's budget (300 ms for a 1,024-node attempt).

Before the whole path, the restricted unpickler alone (`unpickle.loads`) against `pickle.loads` on the same files,
each pass of one taken in turn with a pass of the other (5 x `--repeat`, the best of each): on the 1,024 pickles, on
8 full ring buffers of 2,000 entries (TORCH_FR_BUFFER_SIZE's default) made of a real torch 2.14.1 dump's entries,
and on the torch-written dumps of the tests; the ratio's target is 2. Entries are built as PyTorch pickles them:
objects of their own, the stack frames shared.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import pickle
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from engine import Engine, load_rules  # noqa: E402
from engine.bundle import FLIGHT_RECORDER, load_bundle  # noqa: E402
from engine.flight_recorder import FindingKind, analyse, read_dump_dir  # noqa: E402
from engine.flight_recorder.attempt import attempt_dumps  # noqa: E402
from engine.flight_recorder.unpickle import loads  # noqa: E402

DUMPS = ROOT / "engine" / "flight_recorder" / "tests" / "dumps"
TEMPLATE = DUMPS / "straggler" / "rank_0"
FULL_TEMPLATE = DUMPS / "four_groups" / "rank_0"
TARGET_S = 1.0
UNPICKLER_TARGET = 2.0  # the restricted loader's time over pickle.loads's on the same files


def build(folder: Path, ranks: int, collectives: int, straggler: int) -> None:
    template = loads(TEMPLATE.read_bytes(), name=TEMPLATE.name)
    collective = next(e for e in template["entries"] if e["process_group"][0] == "0")
    subgroup = next(e for e in template["entries"] if e["process_group"][0] != "0")
    (folder / "pickle").mkdir()
    (folder / "json").mkdir()
    for rank in range(ranks):
        count = collectives - 1 if rank == straggler else collectives
        entries = []
        for seq in range(1, count + 1):
            entries.append(_entry(collective, seq=seq))
            if seq == 2 and rank % 2 == 0:
                entries.append(_entry(subgroup))
        for index, entry in enumerate(entries):
            entry["record_id"] = index
        dump = dict(template, entries=entries)
        dump["pg_status"] = {"0": {**template["pg_status"]["0"], "last_enqueued_collective": count}}
        (folder / "pickle" / f"rank_{rank}").write_bytes(pickle.dumps(dump, protocol=2))
        (folder / "json" / f"rank_{rank}").write_text(json.dumps(_json_flavour(dump), separators=(",", ":")))


def _entry(template: dict, **changes) -> dict:
    """An entry as PyTorch pickles it: objects of its own, but for the stack frames, which it shares between entries."""
    seq = changes.pop("seq", None)
    entry = copy.deepcopy({key: value for key, value in template.items() if key != "frames"})
    if seq is not None:
        entry.update(collective_seq_id=seq, op_id=seq, time_created_ns=template["time_created_ns"] + seq)
    entry["frames"] = list(template.get("frames", ()))
    return entry


def full_buffers(folder: Path, ranks: int, entries: int) -> list[Path]:
    """`ranks` dumps whose ring buffers are full (`entries`, TORCH_FR_BUFFER_SIZE's default 2,000), each entry one of
    a real torch 2.14.1 dump's (the four-group job's rank 0), in turn."""
    template = loads(FULL_TEMPLATE.read_bytes(), name=FULL_TEMPLATE.name)
    folder.mkdir()
    paths = []
    for rank in range(ranks):
        kept = template["entries"]
        dump = dict(template, entries=[_entry(kept[index % len(kept)], seq=index + 1) for index in range(entries)])
        paths.append(folder / f"rank_{rank}")
        paths[-1].write_bytes(pickle.dumps(dump, protocol=2))
    return paths


def unpickler_ratio(files: list[Path], repeat: int) -> tuple[float, float]:
    """The best times of the restricted loader and of pickle.loads over the same files, taken in turn."""
    datas = [path.read_bytes() for path in files]
    ours, theirs = float("inf"), float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        for data in datas:
            loads(data, name="bench")
        middle = time.perf_counter()
        for data in datas:
            pickle.loads(data)
        ours, theirs = min(ours, middle - start), min(theirs, time.perf_counter() - middle)
    return ours, theirs


def _json_flavour(dump: dict) -> dict:
    """What _dump_fr_trace_json writes for the same dump: no frames, lists for tuples, strings, 0 for None."""
    dump = copy.deepcopy(dump)
    for entry in dump["entries"]:
        entry.pop("frames", None)
        entry["process_group"] = list(entry["process_group"])
        for field in ("time_discovered_started_ns", "time_discovered_completed_ns"):
            entry[field] = entry[field] or 0
    dump["pg_status"] = {
        group: {key: str(value) for key, value in status.items()} for group, status in dump["pg_status"].items()
    }
    return dump


def bundle(folder: Path, dumps: Path | None, ranks: int, straggler: int) -> Path:
    """A bundle of a hang: 8 ranks per node, every rank but the straggler times out; the dumps when given."""
    nodes = [f"gpu{index:04d}" for index in range(ranks // 8)]
    created = min(entry["time_created_ns"] for entry in loads(TEMPLATE.read_bytes(), name="t")["entries"]) // 10**9
    start, end = created - 3600, created + 3600
    record = {"cluster": "bench", "scheduler": "slurm", "job_id": "1", "nodes": nodes, "tasks_per_node": 8,
              "start": _rfc3339(start), "end": _rfc3339(end), "state": "FAILED", "exit_code": "1:0"}  # fmt: skip
    (folder / "logs").mkdir(parents=True)
    (folder / "attempt.json").write_text(json.dumps(record))
    timeouts = [
        f"[rank{rank}]:[E ProcessGroupNCCL.cpp:632] [Rank {rank}] Watchdog caught collective operation timeout: "
        f"WorkNCCL(SeqNum=16, OpType=ALLREDUCE, NumelIn=4, NumelOut=4, Timeout(ms)=600000) ran for 600021 "
        "milliseconds before timing out."
        for rank in range(ranks)
        if rank != straggler
    ]
    (folder / "logs" / "train.log").write_text("\n".join(timeouts) + "\n")
    if dumps is not None:
        (folder / FLIGHT_RECORDER).mkdir(parents=True)
        for path in dumps.iterdir():
            (folder / FLIGHT_RECORDER / path.name).write_bytes(path.read_bytes())
    return folder


def _rfc3339(seconds: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))


def page_part(summary: dict, repeat: int) -> tuple[int, float]:
    """The stored summary's size, and the best time to decode it and render the attempt page's part of it."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "triage.settings")
    import django
    from django.template.loader import render_to_string

    django.setup()
    stored = json.dumps(summary)
    seconds, html = best(repeat * 10, lambda: render_to_string("pages/flight_recorder.html",
                                                               {"flight_recorder": json.loads(stored)}))  # fmt: skip
    assert 'id="collectives"' in html
    return len(stored), seconds


def best(repeat: int, action) -> tuple[float, object]:
    times, result = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        result = action()
        times.append(time.perf_counter() - start)
    return min(times), result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ranks", type=int, default=1024)
    parser.add_argument("--collectives", type=int, default=16)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    straggler = args.ranks * 3 // 5
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        build(folder, args.ranks, args.collectives, straggler)
        references = {}
        for kind, reference_name, reference in (
            ("pickle", "pickle.loads", pickle.loads),
            ("json", "json.loads", json.loads),
        ):
            files = sorted((folder / kind).iterdir())
            size = sum(path.stat().st_size for path in files)
            ref_s, _ = best(
                args.repeat, lambda files=files, reference=reference: [reference(p.read_bytes()) for p in files]
            )
            references[kind] = ref_s
            read_s, dumps = best(args.repeat, lambda kind=kind: read_dump_dir(folder / kind))
            analyse_s, report = best(args.repeat, lambda dumps=dumps: analyse(dumps, world_size=args.ranks))
            finding = report.findings[0]
            assert (finding.kind, finding.ranks) == (FindingKind.NEVER_ENQUEUED, (straggler,)), report.summary()
            total = read_s + analyse_s
            print(
                f"{kind:6} {len(files)} ranks, {args.collectives} collectives each, {size / 1e6:.1f} MB: "
                f"read {read_s:.3f} s + analyse {analyse_s:.3f} s = {total:.3f} s (target < {TARGET_S:.0f} s: "
                f"{'met' if total < TARGET_S else 'MISSED'}); {reference_name} alone {ref_s:.3f} s; "
                f"ratio {total / ref_s:.1f}x"
            )
        print(finding.text)

        # the restricted unpickler alone, against pickle.loads on the same files, taken in turn (repeat x 5)
        sets = {
            f"{args.ranks} ranks of {args.collectives} collectives": sorted((folder / "pickle").iterdir()),
            "8 full ring buffers of 2,000 entries": full_buffers(folder / "full", 8, 2000),
            "the torch-written test dumps": sorted(DUMPS.glob("*/rank_*")),
        }
        for name, files in sets.items():
            ours, theirs = unpickler_ratio(files, args.repeat * 5)
            ratio = ours / theirs
            print(
                f"unpickler, {name} ({len(files)} files, {sum(p.stat().st_size for p in files) / 1e6:.1f} MB): "
                f"{ours:.4f} s against pickle.loads {theirs:.4f} s: ratio {ratio:.2f}x (target < "
                f"{UNPICKLER_TARGET:.0f}x: {'met' if ratio < UNPICKLER_TARGET else 'MISSED'})"
            )

        engine = Engine(load_rules(ROOT / "rules" / "packs" / "default"))
        with_dumps = bundle(folder / "with", folder / "pickle", args.ranks, straggler)
        without = bundle(folder / "without", None, args.ranks, straggler)
        ref_s, _ = best(args.repeat, lambda: engine.analyse(load_bundle(without)))
        path_s, analysis = best(args.repeat, lambda: engine.analyse(load_bundle(with_dumps)))
        root = analysis.diagnosis["root_cause"]
        node = f"gpu{straggler // 8:04d}"
        assert (root["rule"], root["nodes"]) == ("fr.never_entered", [node]), analysis.diagnosis
        print(
            f"bundle {args.ranks} ranks on {args.ranks // 8} nodes: load_bundle + Engine.analyse {path_s:.3f} s "
            f"(target < {TARGET_S:.0f} s: {'met' if path_s < TARGET_S else 'MISSED'}); the same bundle without its "
            f"dumps {ref_s:.3f} s; the dumps add {path_s - ref_s:.3f} s; ratio to pickle.loads alone "
            f"{path_s / references['pickle']:.1f}x"
        )
        print(root["summary"])

        worst = copy.deepcopy(attempt_dumps(load_bundle(with_dumps)).summary())
        for state in worst["groups"][0]["states"]:  # every other rank stuck: the longest ranges there are
            state["ranks"] = ", ".join(str(rank) for rank in range(state["state"] != "never_arrived", args.ranks, 2))
        for name, summary in (("this set", analysis.dumps.summary()), ("every other rank stuck", worst)):
            size, seconds = page_part(summary, args.repeat)
            print(
                f"page part, {name}: summary {size:,} bytes, decoded and rendered in {seconds * 1000:.1f} ms "
                f"(the attempt page's budget: 300 ms)"
            )


if __name__ == "__main__":
    main()
