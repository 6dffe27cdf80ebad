"""The attempt page's Flight Recorder part: the collective the job stopped in, its ranks by state as ranges, the
culprits linked to their node's lane on the timeline; read from what the analysis recorded, in one query."""

import json
from pathlib import Path

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from access.roles import VIEWER
from diagnoses.models import FlightRecorderSummary

pytestmark = pytest.mark.django_db
DUMPS = Path(__file__).resolve().parents[2] / "engine" / "flight_recorder" / "tests" / "dumps"
RANK_MAP = {"0": "gpu-c", "1": "gpu-a", "2": "gpu-d", "3": "gpu-b"}


@pytest.fixture
def hang(write_bundle, store, tmp_path):
    """``hang(case)``: a stored attempt of four ranks on four nodes with the real dumps of ``case`` and what torchrun
    printed."""

    def make(case: str, **attempt):
        window = {"start": "2026-12-03T12:45:00Z", "end": "2026-12-03T12:55:00Z", **attempt}
        bundle = write_bundle(
            tmp_path / case,
            logs={"torchrun.log": (DUMPS / case / "torchrun.log").read_text()},
            traces={path.name: path.read_bytes() for path in (DUMPS / case).glob("rank_*")},
            nodes=sorted(RANK_MAP.values()), ranks=RANK_MAP, job_id=case, **window,
        )  # fmt: skip
        return store(bundle)

    return make


def page(client, attempt) -> str:
    return client.get(reverse("pages:attempt-detail", args=[attempt.pk])).content.decode()


def test_the_page_shows_the_collective_it_stopped_in_and_who_never_arrived(client_for, hang):
    attempt = hang("straggler")
    html = page(client_for(VIEWER), attempt)
    section = html[html.index('<section id="collectives"') : html.index('<section id="timeline"')]
    assert "from the Flight Recorder dumps of 4 ranks" in section
    assert "Stopped in <code>gloo:all_reduce #4</code>" in section
    assert "process group 0 (default_pg), 4 ranks" in section
    rows = dict(_rows(section))
    assert rows == {"waited in it": ("3", "0-1, 3"), "never arrived": ("1", "2")}
    assert "rank 2 never entered gloo:all_reduce #4 (process group 0 (default_pg); 3 ranks waited)" in section
    # the line the root cause's summary is, above the groups
    assert (
        '<p class="verdict"><strong>Rank 2 on gpu-d never entered gloo:all_reduce #4 (process group 0 (default_pg); '
        "3 ranks waited)</strong></p>"
    ) in section
    # the culprit links to its node's lane on the timeline
    assert '<a href="#lane-gpu-d">gpu-d</a>' in section
    assert 'id="lane-gpu-d"' in html[html.index('<section id="timeline"') :]


def test_a_desync_and_a_missing_dump_are_listed_with_their_nodes(client_for, hang):
    html = page(client_for(VIEWER), hang("dtype_mismatch"))
    section = html[html.index('<section id="collectives"') : html.index('<section id="timeline"')]
    assert "from the Flight Recorder dumps of 3 ranks of 4" in section
    assert dict(_rows(section))["left no dump"] == ("1", "1")
    assert "rank 2 called gloo:all_reduce #4 with input dtypes [Double]" in section
    assert '<a href="#lane-gpu-d">gpu-d</a>' in section  # rank 2, the odd one
    assert '<a href="#lane-gpu-a">gpu-a</a>' in section  # rank 1, which left no dump


def test_a_healthy_set_says_so_and_an_attempt_without_dumps_shows_nothing(client_for, hang, make_bundle, store):
    viewer = client_for(VIEWER)
    assert "No collective pending: every rank completed what it entered." in page(viewer, hang("healthy"))
    assert 'id="collectives"' not in page(viewer, store(make_bundle()))


def test_a_snapshot_in_flight_says_so_and_blames_no_rank(client_for, hang):
    window = {key: value for key, value in _made_by("snapshot").items() if key in ("started_at", "ended_at")}
    attempt = hang("snapshot", start=window["started_at"], end=window["ended_at"], state="CANCELLED")
    html = page(client_for(VIEWER), attempt)
    section = html[html.index('<section id="collectives"') : html.index('<section id="timeline"')]
    assert "In flight <code>gloo:all_reduce #" in section
    assert "of its 60 s timeout by the dump" in section
    assert dict(_rows(section))["not arrived yet"] == ("1", "1")
    assert 'class="verdict"' not in section
    assert '<ul class="findings">' not in section


def _made_by(case: str) -> dict:
    return json.loads((DUMPS / case / "MADE_BY.json").read_text())


def test_the_part_costs_one_query(client_for, hang):
    viewer = client_for(VIEWER)
    attempt = hang("straggler")
    with CaptureQueriesContext(connection) as with_dumps:
        html = page(viewer, attempt)
    assert 'id="collectives"' in html
    FlightRecorderSummary.objects.filter(diagnosis=attempt.current_diagnosis).delete()
    with CaptureQueriesContext(connection) as without:
        html = page(viewer, attempt)
    assert 'id="collectives"' not in html
    assert len(with_dumps.captured_queries) == len(without.captured_queries)  # the same one query, finding nothing
    summary_queries = [q["sql"] for q in with_dumps.captured_queries if "flightrecordersummary" in q["sql"]]
    assert len(summary_queries) == 1


def _rows(section: str):
    """(label, (count, ranks)) of the per-rank table."""
    for row in section.split('<tr class="rank-')[1:]:
        label = row.split('<th scope="row">', 1)[1].split("</th>", 1)[0]
        count = row.split('<td class="num">', 1)[1].split("</td>", 1)[0]
        ranks = row.split('<td class="mono">', 1)[1].split("</td>", 1)[0]
        yield label, (count, ranks)
