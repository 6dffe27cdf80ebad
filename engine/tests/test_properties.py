"""Properties: the diagnosis does not depend on reading order, and hostile input never crashes it
nor produces an attribution out of garbage."""

import random
from dataclasses import replace

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine import to_json
from engine.bundle import load_bundle
from engine.tests.bundles import default_engine, write_bundle

SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

FAULT_LOGS = {
    "node02/syslog.log": [
        "Nov  2 10:14:05 node02 kernel: pcieport 0000:15:03.0: AER: Uncorrected (Fatal) error received: id=1510",
        "Nov  2 10:14:05 node02 kernel: NVRM: Xid (PCI:0000:19:00): 79, GPU has fallen off the bus.",
    ],
    "node03/syslog.log": ["Nov  2 10:14:09 node03 kernel: mlx5_core 0000:40:00.0 mlx5_0: Port: 1 Link DOWN"],
    "slurm-48213.out": [
        "[2026-11-02 10:00:00,000] iteration 100",
        "3: [rank3]:[E1102 10:24:05.1 ProcessGroupNCCL.cpp:607] [Rank 3] Watchdog caught collective operation timeout",
        "20: [rank20]: KeyError: 'labels'",
        "srun: error: node03: tasks 16-23: Exited with exit code 1",
    ],
}


EVENT_DONE = {
    "time": "2026-11-02T10:25:00Z",
    "node": None,
    "source": "slurmctld",
    "reason": "JobComplete",
    "message": "a",
}
EVENT_DRAIN = {
    "time": "2026-11-02T10:20:00Z",
    "node": "node02",
    "source": "slurmctld",
    "reason": "Drain",
    "message": "b",
}


@SETTINGS
@given(seed=st.integers(0, 2**32 - 1))
def test_the_order_of_streams_events_and_metrics_does_not_change_the_diagnosis(tmp_path_factory, seed):
    bundle = write_bundle(
        tmp_path_factory.mktemp("b"),
        logs=FAULT_LOGS,
        events={"slurmctld.json": [EVENT_DONE, EVENT_DRAIN]},
    )
    context = load_bundle(bundle)
    shuffled = random.Random(seed)
    streams, events = list(context.streams), list(context.events)
    shuffled.shuffle(streams)
    shuffled.shuffle(events)
    engine = default_engine()
    assert to_json(engine.diagnose(replace(context, streams=tuple(streams), events=tuple(events)))) == to_json(
        engine.diagnose(context)
    )


@SETTINGS
@given(garbage=st.lists(st.binary(min_size=0, max_size=300), min_size=1, max_size=40))
def test_random_bytes_never_crash_and_never_attribute(tmp_path_factory, garbage):
    logs = {"node01/syslog.log": b"\n".join(garbage), "node02/train.log": b"\r\n".join(reversed(garbage))}
    result = default_engine().diagnose(load_bundle(write_bundle(tmp_path_factory.mktemp("g"), logs=logs)))
    assert result["outcome"] == "unattributed"


@SETTINGS
@given(
    lines=st.lists(
        st.sampled_from(
            [
                "NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus.",  # no timestamp at all
                "\udcff\x00 Xid (PCI:0000:3b:00): 48",
                "Watchdog caught collective operation timeout",
                "x" * 5000,
                "",
            ]
        ),
        max_size=30,
    )
)
def test_system_lines_without_timestamps_still_compete_with_approximate_times(tmp_path_factory, lines):
    text = "\n".join(lines).encode("utf-8", "surrogateescape")
    bundle = write_bundle(tmp_path_factory.mktemp("t"), logs={"node01/syslog.log": text, "node01/dmesg.log": text})
    result = default_engine().diagnose(load_bundle(bundle))
    if any("fallen off the bus" in line for line in lines):
        assert (result["outcome"], result["subdomain"], result["root_cause"]["nodes"]) == (
            "attributed",
            "gpu.bus",
            ["node01"],
        )
        assert result["root_cause"]["time"] is None  # nothing dates it: never an invented time
        assert result["root_cause"]["time_approx"] is True
        assert result["root_cause"]["time_bounds"] == ["2026-11-02T09:00:00Z", "2026-11-02T10:30:00Z"]
    else:
        assert result["outcome"] == "unattributed"


@SETTINGS
@given(skew_minutes=st.integers(-3, 3))
def test_a_few_minutes_of_clock_skew_between_nodes_keeps_the_attribution(tmp_path_factory, skew_minutes):
    minute = 14 + skew_minutes
    logs = {
        "node02/syslog.log": [
            f"Nov  2 10:{minute:02d}:05 node02 kernel: NVRM: Xid (PCI:0000:19:00): 79, GPU has fallen off the bus."
        ],
        "slurm-48213.out": [
            "3: [rank3]:[E1102 10:24:05.1 ProcessGroupNCCL.cpp:607] Watchdog caught collective operation timeout"
        ],
    }
    result = default_engine().diagnose(load_bundle(write_bundle(tmp_path_factory.mktemp("s"), logs=logs)))
    assert (result["outcome"], result["subdomain"], result["root_cause"]["nodes"]) == (
        "attributed",
        "gpu.bus",
        ["node02"],
    )


def test_a_ten_megabyte_line_is_read(tmp_path):
    logs = {
        "node02/syslog.log": b"Nov  2 10:14:05 node02 kernel: " + b"A" * (10 << 20) + b"\n"
        b"Nov  2 10:14:06 node02 kernel: NVRM: Xid (PCI:0000:19:00): 79, GPU has fallen off the bus.\n"
    }
    result = default_engine().diagnose(load_bundle(write_bundle(tmp_path, logs=logs)))
    assert result["root_cause"]["nodes"] == ["node02"]
    assert all(len(item["text"]) <= 501 for item in result["evidence"])
