"""Storing attempts: rows and bundle together or not at all, and every kind of bad upload refused."""

import gzip
import io
import tarfile

import pytest

from diagnoses import bundle_store
from diagnoses.models import Attempt, Cluster, Job, Node
from diagnoses.services import attempts

pytestmark = pytest.mark.django_db


def ingest_bytes(data: bytes) -> Attempt:
    return attempts.attempt_ingest_archive(stream=io.BytesIO(data))


@pytest.fixture
def nothing_stored(stored_bundles, staging_left):
    """``nothing_stored()``: no rows and no bundle, staged or placed."""

    def check() -> bool:
        rows = (Attempt.objects.count(), Job.objects.count(), Cluster.objects.count())
        return rows == (0, 0, 0) and stored_bundles() == [] and staging_left() == []

    return check


def test_a_bundle_directory_is_stored_with_its_rows_and_queued(make_bundle, bundle_root, staging_left):
    source = make_bundle(job_id="7", attempt=1, user="bob")

    attempt = attempts.attempt_ingest_directory(path=source, analyse=False)

    assert attempt.analysis_state == "received"
    assert (attempt.cluster.name, attempt.job.job_id, attempt.number, attempt.user) == ("dgx-a", "7", 1, "bob")
    assert sorted(attempt.nodes.values_list("name", flat=True)) == ["node01", "node02", "node03", "node04"]
    assert attempt.record["nodes"] == ["node01", "node02", "node03", "node04"]
    stored = bundle_store.path_of(attempt.bundle)
    assert (stored / "attempt.json").read_bytes() == (source / "attempt.json").read_bytes()
    assert (stored / "logs" / "node02" / "syslog.log").read_bytes() == (
        source / "logs" / "node02" / "syslog.log"
    ).read_bytes()
    assert source.exists()
    assert staging_left() == []


def test_ingest_queues_the_analysis_on_commit(make_bundle, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        attempt = attempts.attempt_ingest_directory(path=make_bundle())

    assert len(callbacks) == 2  # the analysis queued; its diagnosis announced (diagnoses.signals)
    attempt.refresh_from_db()
    assert attempt.analysis_state == "analysed"
    assert attempt.current_diagnosis.subdomain == "gpu.bus"


def test_an_archive_with_or_without_a_top_directory_is_stored(make_bundle, tar_gz):
    first = ingest_bytes(tar_gz(make_bundle(job_id="1"), top="some-name"))
    second = ingest_bytes(tar_gz(make_bundle(job_id="2"), top=None))

    assert [first.job.job_id, second.job.job_id] == ["1", "2"]
    assert (bundle_store.path_of(second.bundle) / "logs" / "train.log").is_file()


def test_nodes_are_shared_by_the_attempts_of_a_cluster(make_bundle):
    attempts.attempt_ingest_directory(path=make_bundle(job_id="1"), analyse=False)
    attempts.attempt_ingest_directory(path=make_bundle(job_id="2", nodes=("node02", "node09")), analyse=False)

    assert sorted(Node.objects.values_list("name", flat=True)) == ["node01", "node02", "node03", "node04", "node09"]


def test_a_duplicate_attempt_is_refused_and_nothing_more_is_stored(
    make_bundle, bundle_root, tar_gz, stored_bundles, staging_left
):
    attempts.attempt_ingest_directory(path=make_bundle(), analyse=False)

    with pytest.raises(attempts.DuplicateAttempt, match="attempt 0 of job 48213 on cluster dgx-a is already stored"):
        ingest_bytes(tar_gz(make_bundle(job_id="48213", user="someone-else", cluster="dgx-a", attempt=0)))

    assert Attempt.objects.count() == 1
    assert len(stored_bundles()) == 1
    assert staging_left() == []
    shards = [entry for entry in bundle_root.iterdir() if entry.name != ".incoming"]
    assert all(any(shard.iterdir()) for shard in shards)  # no empty shard folder left by the refused one


def test_a_database_failure_leaves_no_bundle_behind(make_bundle, bundle_root, monkeypatch, nothing_stored):
    def broken(*args, **kwargs):
        raise RuntimeError("the database went away")

    monkeypatch.setattr(attempts, "attempt_enqueue", broken)  # fails after the bundle was placed

    with pytest.raises(RuntimeError):
        attempts.attempt_ingest_directory(path=make_bundle())

    assert nothing_stored()


def tar_gz_members(members: list[tuple[tarfile.TarInfo, bytes | None]]) -> bytes:
    """A .tar.gz of hand-made members (for archives no honest tool would write)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for info, data in members:
            if data is not None:
                info.size = len(data)
            archive.addfile(info, io.BytesIO(data) if data is not None else None)
    return buffer.getvalue()


def member(name: str, kind=tarfile.REGTYPE, **fields) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = kind
    for key, value in fields.items():
        setattr(info, key, value)
    return info


ATTEMPT = (
    b'{"cluster": "c", "scheduler": "slurm", "job_id": "1", "nodes": ["n1"], "start": "2026-11-02T10:00:00Z", '
    b'"end": "2026-11-02T10:30:00Z", "state": "FAILED"}'
)


@pytest.mark.parametrize(
    ("upload", "message"),
    [
        (b"just some text", "not a gzip-compressed archive"),
        (gzip.compress(b"plain text, gzip-compressed" * 40), "not a tar archive"),
        (tar_gz_members([(member("../attempt.json"), ATTEMPT)]), "../attempt.json: paths leaving the bundle"),
        (tar_gz_members([(member("a/../../x.log"), b"x")]), "paths leaving the bundle"),
        (tar_gz_members([(member("/etc/attempt.json"), ATTEMPT)]), "/etc/attempt.json: absolute paths"),
        (
            tar_gz_members([(member("attempt.json", tarfile.SYMTYPE, linkname="/etc/passwd"), None)]),
            "attempt.json: links and special files are not allowed",
        ),
        (
            tar_gz_members(
                [(member("a.json"), ATTEMPT), (member("attempt.json", tarfile.LNKTYPE, linkname="a.json"), None)]
            ),
            "attempt.json: links and special files",
        ),
        (tar_gz_members([(member("logs/dev", tarfile.CHRTYPE), None)]), "logs/dev: links and special files"),
        (tar_gz_members([(member("logs/fifo", tarfile.FIFOTYPE), None)]), "links and special files"),
        (tar_gz_members([(member("attempt.json"), ATTEMPT), (member("attempt.json"), ATTEMPT)]), "appears twice"),
        (tar_gz_members([(member("logs/x.log"), b"x")]), "attempt.json: missing"),
        (tar_gz_members([(member("attempt.json"), b"{not json")]), "attempt.json: not valid JSON"),
        (tar_gz_members([(member("attempt.json"), b"[1, 2]")]), "attempt.json: expected a JSON object"),
        (
            tar_gz_members([(member("attempt.json"), ATTEMPT[:-1] + b', "colour": "red"}')]),
            "attempt.json: unknown field 'colour'",
        ),
        (
            tar_gz_members([(member("attempt.json"), ATTEMPT.replace(b'"state": "FAILED"', b'"stat": 1'))]),
            "unknown field 'stat'",
        ),
        (
            tar_gz_members([(member("attempt.json"), ATTEMPT.replace(b', "state": "FAILED"', b""))]),
            "attempt.json: missing required field 'state'",
        ),
        (
            tar_gz_members([(member("attempt.json"), ATTEMPT.replace(b"2026-11-02T10:30:00Z", b"yesterday"))]),
            "attempt.json: field 'end': 'yesterday' is not an RFC 3339 time",
        ),
        (tar_gz_members([(member("attempt.json"), ATTEMPT)])[:-30], "truncated"),
    ],
)
def test_bad_uploads_are_refused_and_nothing_is_stored(upload, message, bundle_root, nothing_stored):
    with pytest.raises(bundle_store.BundleRejected, match=message.replace("(", r"\(").replace(".", r"\.")):
        ingest_bytes(upload)

    assert nothing_stored()


def test_a_decompression_bomb_is_stopped_at_the_byte_limit(settings, bundle_root, nothing_stored):
    settings.FAULTLINE_BUNDLE_MAX_BYTES = 1 << 20
    bomb = tar_gz_members([(member("attempt.json"), ATTEMPT), (member("logs/zeros.log"), bytes(8 << 20))])
    assert len(bomb) < 20_000

    with pytest.raises(bundle_store.BundleTooLarge, match="expands to more than 1,048,576 bytes"):
        ingest_bytes(bomb)

    assert nothing_stored()


def test_an_archive_of_too_many_members_is_refused(settings, bundle_root, nothing_stored):
    settings.FAULTLINE_BUNDLE_MAX_FILES = 10
    many = tar_gz_members([(member("attempt.json"), ATTEMPT)] + [(member(f"logs/{i}.log"), b"") for i in range(10)])

    with pytest.raises(bundle_store.BundleTooLarge, match="more than 10 members"):
        ingest_bytes(many)

    assert nothing_stored()


def test_a_directory_with_a_symlink_is_refused(make_bundle, bundle_root, nothing_stored):
    source = make_bundle()
    (source / "logs" / "node01" / "kern.log").symlink_to("/etc/passwd")

    with pytest.raises(bundle_store.BundleRejected, match="kern.log: links and special files are not allowed"):
        attempts.attempt_ingest_directory(path=source)

    assert nothing_stored()
