"""A bundle whose lines carry no timestamps at all: the diagnosis still names the cause the lines decide, what is
stored keeps the times as approximate (the interval the attempt's window gives), and the attempt page shows them
as approximate, ``~``, with their bounds (docs/rules.md, "Time")."""

from datetime import UTC, datetime, timedelta
from types import SimpleNamespace

import pytest
from django.utils.html import strip_tags

from access.roles import VIEWER
from diagnoses.models import Evidence, NodeEvent
from pages.templatetags.times import APPROXIMATE, when

START, END = datetime(2026, 11, 2, 9, 0, tzinfo=UTC), datetime(2026, 11, 2, 10, 30, tzinfo=UTC)
NODES = ["node01", "node02"]


@pytest.fixture
def unstamped(write_bundle, store, tmp_path):
    """Two nodes; node02's kernel log says its GPU fell off the bus, then every rank's NCCL watchdog times out;
    not one line has a time."""
    ranks = range(4)
    logs = {
        "node01/syslog.log": ["node01 kernel: eth0: link up, 100Gbps, full duplex"],
        "node02/syslog.log": [
            "node02 kernel: eth0: link up, 100Gbps, full duplex",
            "node02 kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', name=<unknown>, "
            "GPU has fallen off the bus.",
        ],
        "train.log": [f"[rank{r}]: INFO step 1 loss 2.31" for r in ranks]
        + [
            f"[rank{r}]:[E ProcessGroupNCCL.cpp:616] [Rank {r}] Watchdog caught collective operation timeout: "
            "WorkNCCL(SeqNum=9, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600023 "
            "milliseconds before timing out."
            for r in ranks
        ],
    }
    bundle = write_bundle(
        tmp_path / "unstamped", logs=logs, nodes=NODES, tasks_per_node=2, start=START.isoformat(), end=END.isoformat()
    )
    return store(bundle)


def test_the_cause_is_found_and_its_time_kept_approximate(unstamped):
    diagnosis = unstamped.current_diagnosis
    document = diagnosis.document
    assert (document["outcome"], document["domain"], document["subdomain"]) == ("attributed", "hardware", "gpu.bus")
    assert document["root_cause"]["nodes"] == ["node02"]
    assert document["root_cause"]["time_approx"] is True
    root = Evidence.objects.get(diagnosis=diagnosis, role="root_cause")
    assert root.node.name == "node02"
    assert "fallen off the bus" in root.text
    assert root.time_approx
    assert root.time_low is not None
    assert root.time_high is not None
    assert START <= root.time_low <= root.time_high <= END
    events = NodeEvent.objects.filter(diagnosis=diagnosis)
    assert events.exists()
    assert not events.filter(time_approx=False).exists()
    assert not events.filter(time_low__isnull=True).exists()


def test_an_exact_time_is_stored_without_bounds(make_bundle, store):
    attempt = store(make_bundle(job_id="7"))
    root = Evidence.objects.get(diagnosis=attempt.current_diagnosis, role="root_cause")
    assert not root.time_approx
    assert root.time_low is None
    assert root.time_high is None
    assert root.time is not None


def test_the_page_shows_the_times_as_approximate_with_their_bounds(unstamped, client_for):
    page = client_for(VIEWER).get(f"/attempts/{unstamped.pk}/").content.decode()
    root = Evidence.objects.get(diagnosis=unstamped.current_diagnosis, role="root_cause")
    assert root.time is None  # nothing in its stream dates it: only the attempt's window bounds it
    interval = f"~{root.time_low:%Y-%m-%d %H:%M:%S} – {root.time_high:%H:%M:%S} UTC"  # the day once
    assert f'title="{APPROXIMATE}"><span class="visually-hidden">approximately </span>{interval}</time>' in page
    assert 'class="mark role-root_cause approx"' in page  # the timeline draws the interval
    assert (
        f"root cause: gpu.xid.fallen_off_bus between {root.time_low:%H:%M:%S} and {root.time_high:%H:%M:%S} UTC" in page
    )
    symptoms = page[page.index('id="symptoms-heading"') :]
    assert 'class="approx"' in symptoms[: symptoms.index("</table>")]  # a symptom's first time too


def test_one_clock_time_or_one_interval_never_both_and_no_interval_of_no_width():
    """Each line says once that its time is approximate (the sentence is the evidence trail's, and the title's)."""
    low = datetime(2026, 11, 2, 10, 14, 7, tzinfo=UTC)
    row = SimpleNamespace(time=low, time_approx=True, time_low=low, time_high=low + timedelta(seconds=2))
    point = SimpleNamespace(time=low, time_approx=True, time_low=low, time_high=low + timedelta(microseconds=400))
    after = SimpleNamespace(time=low, time_approx=True, time_low=low, time_high=None)

    assert strip_tags(when(row)) == "approximately ~2026-11-02 10:14:07 – 10:14:09 UTC"
    assert strip_tags(when(point)) == "approximately ~2026-11-02 10:14:07 UTC"
    assert strip_tags(when(after)) == "approximately some time after 2026-11-02 10:14:07 UTC"
    assert strip_tags(when({"time": "2026-11-02T10:14:07Z"})) == "2026-11-02 10:14:07 UTC"
    assert "between" not in when(row)
