"""The catalog of real messages (rules/catalog/): each one is classified by the default pack exactly as it says.

Every entry is a message as the software prints it, with the source file and version it comes from; see
rules/catalog/README.md.
"""

from datetime import UTC, datetime
from pathlib import Path

import pytest
import yaml

from engine.context import Attempt, AttemptContext, LogStream, SchedulerEvent
from engine.node_names import NodeNames
from engine.normalise import Clock
from engine.tests.bundles import default_engine

CATALOG = Path(__file__).resolve().parents[2] / "rules" / "catalog"
STREAM_FILES = {"system": "syslog", "app": "train", "scheduler": "slurmctld"}
STREAMS = (*STREAM_FILES, "events")
FIELDS = {"message", "line", "stream", "source", "rule", "also", "role", "domain", "subdomain", "note"}
ATTEMPT = Attempt(
    cluster="c", scheduler="slurm", job_id="", attempt=0, nodes=("n1",), state="FAILED",
    start=datetime(2026, 1, 1, tzinfo=UTC), end=datetime(2026, 1, 2, tzinfo=UTC),
)  # fmt: skip


def load_catalog() -> list[tuple[str, int, dict]]:
    entries = []
    for path in sorted(CATALOG.glob("*.yaml")):
        document = yaml.safe_load(path.read_text())
        assert set(document) == {"family", "description", "entries"}, path.name
        assert document["family"] == path.stem, path.name
        entries += [(path.name, i, entry) for i, entry in enumerate(document["entries"])]
    return entries


ENTRIES = load_catalog()


def classify(stream: str, text: str) -> set[str]:
    """The ids of the default pack's rules that match ``text`` in a stream of that kind."""
    extractor = default_engine().extractor
    if stream == "events":
        reason, _, message = text.partition(": ")
        event = SchedulerEvent(time=None, node="n1", source="kubernetes", reason=reason, message=message, ref="e")
        found = extractor.scheduler_events(AttemptContext(attempt=ATTEMPT, events=(event,)), NodeNames(ATTEMPT.nodes))
    else:
        name = STREAM_FILES[stream]
        log = LogStream.from_bytes(f"logs/n1/{name}.log", name, "n1", text.encode())
        clock = Clock("UTC", ATTEMPT.start, ATTEMPT.end)
        found, stats = extractor.scan_stream(log, clock, NodeNames(ATTEMPT.nodes), {})
        found += [record.event for record in stats.progress.values()]  # progress lines are kept apart
    return {event.rule.id for event in found}


@pytest.mark.parametrize(("file", "index", "entry"), ENTRIES, ids=[f"{f}:{i}" for f, i, _ in ENTRIES])
def test_the_default_pack_classifies_each_message_as_catalogued(file, index, entry):
    wanted = {entry["rule"], *entry.get("also", ())} - {None}
    text = entry.get("line", entry["message"])  # the full line where the message has a prefix (syslog, NCCL's)
    assert classify(entry["stream"], text) == wanted, f"{file} entry {index}: {text[:120]}"


@pytest.mark.parametrize(("file", "index", "entry"), ENTRIES, ids=[f"{f}:{i}" for f, i, _ in ENTRIES])
def test_each_entry_is_well_formed_and_names_the_rule_as_the_pack_has_it(file, index, entry):
    rules = {rule.id: rule for rule in default_engine().ruleset.rules}
    assert set(entry) <= FIELDS
    assert {"message", "stream", "source", "rule"} <= set(entry)
    assert entry["stream"] in STREAMS
    source = entry["source"]
    assert set(source) in ({"repo", "path", "version"}, {"url"}, {"url", "version"}), source
    assert all(isinstance(value, str) and value for value in source.values())
    if entry["rule"] is None:
        assert not {"role", "domain", "subdomain", "also"} & set(entry)
        return
    rule = rules[entry["rule"]]
    assert all(extra in rules for extra in entry.get("also", ()))
    assert entry["role"] == rule.role
    if rule.role == "cause":
        assert (entry["domain"], entry["subdomain"]) == (rule.domain, rule.subdomain)
    else:
        assert not {"domain", "subdomain"} & set(entry)


def test_the_catalog_holds_at_least_300_distinct_sourced_messages():
    messages = {entry["message"] for _, _, entry in ENTRIES}
    assert len(messages) == len(ENTRIES), "a message is catalogued twice"
    assert len(messages) >= 300
    families = {file for file, _, _ in ENTRIES}
    assert len(families) >= 15
