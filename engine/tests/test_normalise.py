"""Normalising lines: every timestamp form of docs/rules.md ("Time"), rank prefixes, hosts, kernel uptime."""

from datetime import UTC, datetime

import pytest

from engine.normalise import RAW_RANK, BootClock, Clock, line_rank, parse_line


def utc(*args) -> float:
    return datetime(*args, tzinfo=UTC).timestamp()


@pytest.fixture
def clock():
    return Clock("UTC", datetime(2026, 11, 2, 9, tzinfo=UTC), datetime(2026, 11, 2, 11, tzinfo=UTC))


@pytest.mark.parametrize(
    ("line", "system", "expected", "message"),
    [
        ("2026-11-02T10:14:07+0000 node02 kernel: NVRM: Xid", True, utc(2026, 11, 2, 10, 14, 7), "kernel: NVRM: Xid"),
        ("2026-11-02T04:14:07-0600 node02 kernel: x", True, utc(2026, 11, 2, 10, 14, 7), "kernel: x"),
        ("2026-11-02T10:14:07.250Z node02 kernel: x", True, utc(2026, 11, 2, 10, 14, 7, 250000), "kernel: x"),
        (
            "Nov  2 10:14:07 node02 kernel: [61040.302721] AER",
            True,
            utc(2026, 11, 2, 10, 14, 7),
            "kernel: [61040.302721] AER",
        ),
        ("[Mon Nov  2 10:14:07 2026] NVRM: Xid", True, utc(2026, 11, 2, 10, 14, 7), "NVRM: Xid"),
        ("E1102 10:14:07.123456 12 ProcessGroupNCCL.cpp:1] x", False, utc(2026, 11, 2, 10, 14, 7, 123456), None),
        (
            "[rank3]:[E1102 10:14:07.123456789 ProcessGroupNCCL.cpp:607] x",
            False,
            utc(2026, 11, 2, 10, 14, 7, 123456),
            None,
        ),
        (
            "2026-11-02 10:14:07,930 - INFO - __main__ - saving",
            False,
            utc(2026, 11, 2, 10, 14, 7, 930000),
            "- INFO - __main__ - saving",
        ),
        ("[2026-11-02 10:14:07,860] torch.distributed: [WARNING] x", False, utc(2026, 11, 2, 10, 14, 7, 860000), None),
        ("[INFO|trainer.py:3801] 2026-11-02 10:14:07,670 >> Saving", False, utc(2026, 11, 2, 10, 14, 7, 670000), None),
        (
            "slurmstepd: error: *** STEP 1.0 ON n1 CANCELLED AT 2026-11-02T10:14:07 ***",
            False,
            utc(2026, 11, 2, 10, 14, 7),
            None,
        ),
        ("  time      : 2026-11-02_10:14:07", False, utc(2026, 11, 2, 10, 14, 7), None),
        ("<4>1 2026-11-02T10:14:07Z node02 kernel: NVRM: Xid", True, utc(2026, 11, 2, 10, 14, 7), "kernel: NVRM: Xid"),
        ("2026-11-02T10:14:07,250000+00:00 node02 kernel: x", True, utc(2026, 11, 2, 10, 14, 7, 250000), "kernel: x"),
        (
            "2026-11-02T10:14:07.123456789Z stderr F KeyError: 'labels'",
            False,
            utc(2026, 11, 2, 10, 14, 7, 123457),
            "KeyError: 'labels'",
        ),
    ],
)
def test_timestamp_forms(clock, line, system, expected, message):
    parsed = parse_line(line, clock, system)
    assert parsed.time == pytest.approx(expected, abs=1e-5)
    if message is not None:
        assert parsed.message == message


def test_a_glog_month_may_have_one_digit(clock):
    # PyTorch prints "E211" for February 11th and "E1114" for November 14th.
    early = Clock("UTC", datetime(2025, 2, 11, 8, tzinfo=UTC), datetime(2025, 2, 11, 23, tzinfo=UTC))
    assert parse_line("[E211 15:24:15.746538005 x.cpp:632] y", early, False).time == utc(
        2025, 2, 11, 15, 24, 15, 746538
    )


def test_yearless_times_take_the_year_nearest_the_window():
    # A job that ran over new year: December lines belong to the previous year.
    clock = Clock("UTC", datetime(2026, 12, 31, 23, tzinfo=UTC), datetime(2027, 1, 1, 2, tzinfo=UTC))
    assert parse_line("Dec 31 23:30:00 n1 kernel: x", clock, True).time == utc(2026, 12, 31, 23, 30)
    assert parse_line("Jan  1 01:00:00 n1 kernel: x", clock, True).time == utc(2027, 1, 1, 1)


def test_times_without_a_zone_are_in_the_attempts_zone():
    clock = Clock("Europe/Paris", datetime(2025, 12, 2, 0, tzinfo=UTC), datetime(2025, 12, 2, 3, tzinfo=UTC))
    assert parse_line("Dec  2 02:52:50 n1 kernel: x", clock, True).time == utc(2025, 12, 2, 1, 52, 50)
    assert parse_line("2025-12-02T02:52:50+0100 n1 kernel: x", clock, True).time == utc(2025, 12, 2, 1, 52, 50)


@pytest.mark.parametrize(
    ("line", "rank", "message"),
    [
        ("12: [rank12]: KeyError: 'labels'", 12, "KeyError: 'labels'"),
        ("[default3]:[rank19]:[E1102 10:14:07.1 x] y", 19, "[E1102 10:14:07.1 x] y"),
        ("[default3]:KeyError: 'labels'", None, "KeyError: 'labels'"),
        ("5: ModuleNotFoundError: No module named 'fire'", 5, "ModuleNotFoundError: No module named 'fire'"),
        ("12:30:00 not a prefix", None, "12:30:00 not a prefix"),
        ("[1,12]<stdout>:KeyError: 'labels'", 12, "KeyError: 'labels'"),
        ("2026-11-02T10:13:44.884Z: [1,12]<stderr>:KeyError: 'x'", 12, "KeyError: 'x'"),
    ],
)
def test_rank_prefixes(clock, line, rank, message):
    parsed = parse_line(line, clock, False)
    assert parsed.rank == rank
    assert parsed.message == message


def test_hosts_come_from_syslog_and_nccl_prefixes(clock):
    assert parse_line("Nov  2 10:14:07 dgx-0474 kernel: x", clock, True).host == "dgx-0474"
    assert parse_line("Nov  2 10:14:07 dgx-0474 systemd[1]: x", clock, True).host == "dgx-0474"
    nccl = "22: dgx-0473:2814086:2814172 [6] ib_plugin.c:1615 NCCL WARN NET/IB : x"
    assert parse_line(nccl, clock, False).host == "dgx-0473"
    assert parse_line("Nov  2 10:14:07 dgx-0474 kernel: x", clock, False).host is None
    mpirun = "2026-11-02T10:13:44.884Z: [1,12]<stdout>:gpu-57:815:864 [0] transport/net_ib.cu:80 NCCL WARN x"
    assert (parse_line(mpirun, clock, False).host, parse_line(mpirun, clock, False).time) == ("gpu-57", 1793614424.884)


def test_kernel_uptime_is_resolved_from_the_boot_anchor(clock):
    parsed = parse_line("[59932.104189] NVRM: Xid (PCI:0000:3a:00): 48, x", clock, True)
    assert parsed.time is None
    assert parsed.uptime == pytest.approx(59932.104189)
    boot = BootClock()
    boot.see(1, "[    0.000000] Linux version 5.14.0 (buildd@lcy02) #134 SMP")
    boot.see(12, "[    1.908814] rtc_cmos 00:02: setting system clock to 2024-08-01T12:53:04 UTC (1722516784)")
    assert boot.resolve(229, parsed.uptime) == pytest.approx(1722516784 - 1.908814 + 59932.104189)


def test_each_boot_takes_its_own_anchor():
    boot = BootClock()
    boot.see(1, "[    0.000000] Linux version 5.15.0 x")
    boot.see(5, "[   30.000000] audit: type=1400 audit(1700000030.000:7): apparmor")
    boot.see(100, "[    0.000000] Linux version 5.15.0 x")
    boot.see(104, "[   10.000000] audit: type=1400 audit(1710000010.000:1): apparmor")
    assert boot.resolve(50, 60.0) == pytest.approx(1700000060.0)
    assert boot.resolve(150, 60.0) == pytest.approx(1710000060.0)


def test_uptime_without_an_anchor_stays_unknown():
    assert BootClock().resolve(10, 123.0) is None


def test_bounds_from_other_streams_narrow_the_boot_time():
    boot = BootClock()
    assert boot.bound(10, 100.0, 1000.0, 1030.0)  # the line at uptime 100 happened in [1000, 1030]
    assert boot.bound(20, 200.0, 1110.0, 1200.0)  # and this one in [1110, 1200]: boot in [910, 930]
    assert (boot.resolve(30, 50.0), boot.resolve(30, 50.0, high=True)) == (960.0, 980.0)
    assert not boot.exact(30)


def test_contradicting_bounds_leave_the_boot_unanchored():
    boot = BootClock()
    assert boot.bound(10, 100.0, 1000.0, 1030.0)
    assert not boot.bound(20, 200.0, 5000.0, 5010.0)
    assert not boot.bound(30, 300.0, 1200.0, 1230.0)  # consistent with the first, but the boot stays in doubt
    assert boot.resolve(40, 50.0) is None


def test_a_boot_anchor_of_the_stream_itself_is_kept():
    boot = BootClock()
    boot.see(5, "[   30.000000] audit: type=1400 audit(1700000030.000:7): apparmor")
    assert not boot.bound(10, 100.0, 1000.0, 1030.0)
    assert boot.exact(10)
    assert boot.resolve(10, 100.0) == boot.resolve(10, 100.0, high=True) == pytest.approx(1700000100.0)


@pytest.mark.parametrize(
    "line",
    [
        "",
        "\x00\x01\x02",
        "Feb 30 25:61:99 host kernel: x",
        "2026-13-45T99:99:99Z x",
        "[E1399 10:14:07.1 x] y",
        "é" * 50,
    ],
)
def test_garbage_never_raises(clock, line):
    parsed = parse_line(line, clock, True)
    assert parsed.time is None or isinstance(parsed.time, float)


@pytest.mark.parametrize(
    "line",
    [
        "[rank12]: 2026-11-02 09:00:01,000 INFO step 3 loss 2.1",
        "[rank12]: gpu001:4012:4112 [4] NCCL INFO Channel 00/0",
        "[rank: 7] step 3 loss 2.1",
        "[rank3]: node01: step 3 loss 2.1",  # a host prefix follows (a node of the attempt)
        "[rank3]: other: step 3 loss 2.1",  # a name and ":" that is not a node: line_rank decides
        "[rank3]: 12: step 3 loss 2.1",  # a label prefix follows
        "[rank3]: [rank4]: step 3 loss 2.1",  # a later rank prefix wins
        "[rank3]: (pid=42, ip=10.0.0.2) step 3 loss 2.1",  # a Ray prefix follows
        "[rank3]:  step 3 loss 2.1",  # two spaces
        "[rank3]: 12\u0663: step 3",  # a non-ASCII digit: the prefix "12\u0663: " follows
        "[rank3]:\u00a0node01: step 3",  # a non-ASCII space after the prefix
        "[rank3]: \u00e9tape 3 loss 2.1",
        "[rank3]: _step 3 loss 2.1",
        "[rank3]:step 3 loss 2.1",
        "[default3]: step 3 loss 2.1",
        "step 3 loss 2.1",
    ],
)
def test_the_rank_read_from_raw_bytes_is_the_one_the_decoded_line_gives(line):
    """``RAW_RANK`` reads a rank without decoding only where ``line_rank`` would give the same."""
    known = {"node01"}.__contains__
    match = RAW_RANK.match(line.encode())
    decoded = line_rank(line, False, known)
    if match is not None:
        assert int(match.group(1)) == decoded == line_rank(line, True, known)
    assert (match is not None) == line.startswith(("[rank12]: 2026", "[rank: 7]", "[rank3]: _", "[rank3]:  "))
