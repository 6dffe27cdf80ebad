"""Reading dumps: the real Gloo dumps, pickle and JSON alike; every bad field, version or name is named."""

import json
import pickle
import shutil
from pathlib import Path

import pytest

from engine.flight_recorder import SUPPORTED_VERSIONS, DumpError, parse_dump, read_dump_dir

DUMPS = Path(__file__).parent / "dumps"


def made_by(case: str) -> dict:
    return json.loads((DUMPS / case / "MADE_BY.json").read_text())


def raw(case: str, rank: int) -> dict:
    return pickle.loads((DUMPS / case / f"rank_{rank}").read_bytes())


def test_a_directory_of_real_dumps_reads_in_rank_order():
    dumps = read_dump_dir(DUMPS / "dead")
    assert [dump.rank for dump in dumps] == [0, 1, 2, 3, 4, 6, 7]
    assert [dump.file for dump in dumps] == [f"rank_{rank}" for rank in (0, 1, 2, 3, 4, 6, 7)]
    assert {dump.version for dump in dumps} == {"2.10"}
    assert {dump.format for dump in dumps} == {"pickle"}
    entry = dumps[0].entries[0]
    assert (entry.process_group, entry.pg_desc, entry.collective_seq_id, entry.profiling_name) == (
        "0",
        "default_pg",
        1,
        "gloo:all_reduce",
    )
    assert entry.input_sizes == ((4,),)
    assert entry.input_dtypes == ("Float",)
    assert entry.frames[0].name == "all_reduce"
    assert dumps[0].status[0].pg_id == 0
    assert dumps[0].status[0].last_enqueued == 4


def test_gloo_groups_recorded_under_an_empty_name_are_left_out():
    assert raw("healthy", 1)["pg_config"][""]["ranks"] == "[0, 1, 2, 3]"
    assert all(dump.groups == () for dump in read_dump_dir(DUMPS / "healthy"))


@pytest.mark.parametrize("case", ["healthy", "straggler"])
def test_json_and_pickle_of_the_same_moment_read_alike(case):
    pickles, jsons = read_dump_dir(DUMPS / case), read_dump_dir(DUMPS / case / "json")
    assert {dump.format for dump in jsons} == {"json"}
    for from_pickle, from_json in zip(pickles, jsons, strict=True):
        assert from_pickle.status == from_json.status
        # JSON dumps carry no stack traces; everything else is the same.
        assert [entry.frames for entry in from_json.entries] == [()] * len(from_json.entries)
        assert [entry._replace(frames=()) for entry in from_pickle.entries] == list(from_json.entries)


def test_the_prefix_is_inferred_or_must_be_named(tmp_path):
    for rank in range(2):
        shutil.copy(DUMPS / "healthy" / f"rank_{rank}", tmp_path / f"nccl_trace_rank_{rank}")
    (tmp_path / "notes.txt").write_text("not a dump")
    assert [dump.rank for dump in read_dump_dir(tmp_path)] == [0, 1]
    shutil.copy(DUMPS / "healthy" / "rank_2", tmp_path / "other_2")
    with pytest.raises(DumpError, match="several prefixes \\(nccl_trace_rank_, other_\\): name the prefix"):
        read_dump_dir(tmp_path)
    assert [dump.rank for dump in read_dump_dir(tmp_path, prefix="other_")] == [2]


def test_not_a_directory():
    with pytest.raises(DumpError, match="not a directory"):
        read_dump_dir(DUMPS / "nowhere")


@pytest.mark.parametrize("version", ["2.3", "3.0", "2.11", None, 2.1])
def test_unsupported_versions_are_refused(version):
    dump = raw("straggler", 0)
    dump["version"] = version
    with pytest.raises(DumpError, match=r"rank_0: Flight Recorder dump version .* is not supported \(supported: 2.4,"):
        parse_dump(pickle.dumps(dump), name="rank_0", rank=0)


def test_the_supported_versions():
    assert SUPPORTED_VERSIONS == ("2.4", "2.5", "2.6", "2.7", "2.8", "2.9", "2.10")


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d["entries"][2].pop("collective_seq_id"), "entry 2: field collective_seq_id: expected an integer"),
        (lambda d: d["entries"][0].update(state="lost"), "entry 0: field state: 'lost' is none of scheduled"),
        (lambda d: d["entries"][1].update(process_group="0"), "entry 1: field process_group: expected a \\(name"),
        (lambda d: d["entries"][1].update(input_sizes=[4]), "entry 1: field input_sizes: expected a list of lists"),
        (lambda d: d["entries"][1].update(retired="yes"), "entry 1: field retired: expected a boolean"),
        (lambda d: d.update(entries={}), "field entries: expected a list"),
        (lambda d: d["pg_status"].update({"x": {}}), "pg_status 'x': field pg_id: expected an integer"),
        (
            lambda d: d.update(pg_config={"1": {"name": "1", "desc": "", "ranks": "0,1"}}),
            "pg_config '1': field ranks: expected a",
        ),
    ],
)
def test_bad_fields_are_named_with_the_file(change, message):
    dump = raw("straggler", 0)
    change(dump)
    with pytest.raises(DumpError, match=f"rank_0: {message}"):
        parse_dump(pickle.dumps(dump), name="rank_0", rank=0)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"", "neither a pickle nor a JSON"),
        (b"\x00\x01binary", "neither a pickle nor a JSON"),
        (b'{"version": "2.10", ', "malformed JSON"),
        (b"[" * 100_000, "neither a pickle nor a JSON"),
        (b'{"a": ' + b"[" * 100_000 + b"]" * 100_000 + b"}", "nested deeper than 32 levels"),
        (b"[]", "neither"),
        (b'{"version": "2.10", "entries": [[]]}', "entry 0: expected a dict"),
    ],
)
def test_hostile_files_are_named(data, message):
    with pytest.raises(DumpError, match=f"rank_9: ({message})"):
        parse_dump(data, name="rank_9", rank=9)


def test_a_real_json_dump_with_string_statuses_and_zero_times():
    text = (DUMPS / "straggler" / "json" / "rank_0").read_text()
    assert '"last_completed_collective":"4"' in text
    assert '"time_discovered_started_ns":0' in text
    dump = parse_dump(text.encode(), name="rank_0", rank=0)
    assert dump.status[0].last_completed == 4
    assert dump.entries[0].time_discovered_started_ns is None
