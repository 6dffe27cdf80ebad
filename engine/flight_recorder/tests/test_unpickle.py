"""The restricted unpickler: plain data comes back as pickle.loads gives it; anything else is refused, running
nothing."""

import copyreg
import os
import pickle
import pickletools
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine.flight_recorder import DumpError, PickleRefused
from engine.flight_recorder.unpickle import MAX_BYTES, interpret, loads

DUMPS = Path(__file__).parent / "dumps"

scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text() | st.binary()
keys = st.text() | st.integers() | st.booleans() | st.none()
plain = st.recursive(
    scalars,
    lambda children: st.lists(children) | st.tuples(children, children) | st.dictionaries(keys, children),
    max_leaves=30,
)


@given(plain, st.integers(min_value=3, max_value=5))
def test_plain_data_comes_back_as_pickle_gives_it(value, protocol):
    data = pickle.dumps(value, protocol=protocol)
    assert loads(data, name="x") == pickle.loads(data)
    assert interpret(data, name="x") == pickle.loads(data)


@pytest.mark.parametrize("protocol", [0, 1, 2])
def test_old_protocols_without_bytes(protocol):
    value = {"a": [1, -2, 2**80, 1.5, None, True, "é" * 3, (1, 2)], 7: {"b": ()}}
    assert loads(pickle.dumps(value, protocol=protocol), name="x") == value


def test_every_real_dump_reads_as_pickle_reads_it():
    files = sorted(path for path in DUMPS.glob("*/rank_*"))
    assert len(files) >= 20
    for path in files:
        data = path.read_bytes()
        assert loads(data, name=path.name) == pickle.loads(data), path
        assert interpret(data, name=path.name) == pickle.loads(data), path


class RunsCommand:
    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def test_a_pickle_that_would_run_a_command_is_refused_and_runs_nothing(tmp_path):
    marker = tmp_path / "ran"
    data = pickle.dumps({"version": "2.10", "entries": [RunsCommand(marker)]}, protocol=2)
    with pytest.raises(PickleRefused, match=r"rank_3: refused pickle opcode GLOBAL at byte \d+"):
        loads(data, name="rank_3")
    assert not marker.exists()
    pickle.loads(data)  # the same bytes given to the standard loader do run it: the test above could fail
    assert marker.exists()


@pytest.mark.parametrize(
    ("data", "opcode"),
    [
        (pickle.dumps(RunsCommand(Path("/nonexistent/x")), protocol=4), "STACK_GLOBAL"),
        (b"(ibuiltins\nobject\n.", "INST"),
        (pickle.dumps(Path("/x"), protocol=2), "GLOBAL"),
        (pickle.dumps({1, 2}, protocol=4), "EMPTY_SET"),
        (pickle.dumps(frozenset({1}), protocol=4), "FROZENSET"),
        (pickle.dumps(bytearray(b"ab"), protocol=5), "BYTEARRAY8"),
        (b"\x80\x02K\x01Q.", "BINPERSID"),
        (b"\x80\x02)K\x01R.", "REDUCE"),
        (b"\x80\x02}}b.", "BUILD"),
        (b"\x80\x02\x82\x01.", "EXT1"),
        (b"\x80\x05\x97.", "NEXT_BUFFER"),
    ],
)
def test_refused_opcodes_are_named(data, opcode):
    assert opcode in {op.name for op, _, _ in pickletools.genops(data)}
    with pytest.raises(PickleRefused, match=rf"dump_7: refused pickle opcode {opcode} at byte"):
        loads(data, name="dump_7")


def test_an_extension_code_stays_refused_even_when_registered():
    copyreg.add_extension(os.system.__module__, "system", 240)
    try:
        data = pickle.dumps(os.system, protocol=2)
        with pytest.raises(PickleRefused, match="EXT1"):
            loads(data, name="x")
    finally:
        copyreg.remove_extension(os.system.__module__, "system", 240)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"", "truncated or malformed pickle"),
        (b"\x80\x02", "truncated or malformed pickle"),
        (pickle.dumps({"a": "b" * 100}, protocol=2)[:20], "truncated"),
        (b"\x80\x02}q\x00(K\x01K\x02K\x03u.", "odd number of items"),
        (b"\x80\x02](K\x01K\x02u.", "SETITEMS at byte 8 onto a list"),
        (b"\x80\x02}]K\x01s.", "dict key of type list"),
        (b"\x80\x02h\x05.", "malformed"),
        (b"\x80\x09N.", "protocol 9"),
    ],
)
def test_malformed_pickles_are_named(data, message):
    with pytest.raises(DumpError, match=message):
        loads(data, name="rank_0")


def test_the_interpreter_alone_refuses_python_2_strings_and_a_stack_left_over():
    # The standard library's unpickler takes both as plain data, which loads() then returns.
    assert loads(b"S'abc'\np0\n.", name="x") == "abc"
    with pytest.raises(PickleRefused, match="rank_0: refused pickle opcode STRING at byte 0"):
        interpret(b"S'abc'\np0\n.", name="rank_0")
    with pytest.raises(DumpError, match="rank_0: malformed pickle \\(STOP at byte 6 with an unbalanced stack\\)"):
        interpret(b"\x80\x02K\x01K\x02.", name="rank_0")


def test_an_oversized_pickle_is_refused_before_it_is_read():
    with pytest.raises(DumpError, match=r"rank_0: 67,108,865 bytes, more than the 67,108,864"):
        loads(b"\x80" + bytes(MAX_BYTES), name="rank_0")


def test_deep_nesting_is_refused():
    value: list = []
    for _ in range(100):
        value = [value]
    with pytest.raises(DumpError, match="nested more than 32 deep"):
        loads(pickle.dumps(value, protocol=4), name="rank_0")


def test_recursive_structures_are_refused():
    value: list = []
    value.append(value)
    with pytest.raises(DumpError, match=r"rank_0: a container inside itself \(byte \d+\)"):
        loads(pickle.dumps(value, protocol=4), name="rank_0")
    outer: list = []
    outer.append({"inner": outer})
    with pytest.raises(DumpError, match="rank_0: a container filled after it was nested in another"):
        loads(pickle.dumps(outer, protocol=4), name="rank_0")


def test_exponentially_shared_tuples_are_refused():
    value: tuple = ("x",)
    for _ in range(30):
        value = (value, value)  # 2**30 leaves in 200 bytes
    data = pickle.dumps(value, protocol=4)
    assert len(data) < 1000
    with pytest.raises(DumpError, match="more than 4,000,000 values"):
        loads(data, name="rank_0", max_depth=64)
