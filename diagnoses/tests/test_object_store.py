"""Bundles in an S3-compatible object store, against a real S3-protocol server (moto's standalone server): uploads,
gathered bundles, the engine's cache, evidence excerpts, downloads, exports and retention; an unreachable store."""

import io
import json
import tarfile
from datetime import timedelta

import pytest

from access.roles import TRIAGER, VIEWER
from diagnoses import bundle_cache, bundle_store, selectors
from diagnoses.models import Attempt
from diagnoses.services import analysis, attempts, retention

pytestmark = pytest.mark.django_db


def ingest(make_bundle, tar_gz, **fields) -> Attempt:
    attempt = attempts.attempt_ingest_archive(stream=io.BytesIO(tar_gz(make_bundle(**fields))), analyse=False)
    analysis.attempt_analyse(attempt_id=attempt.pk)
    return Attempt.objects.select_related("cluster", "job", "current_diagnosis").get(pk=attempt.pk)


def test_an_uploaded_bundle_is_stored_as_objects_and_analysed_from_the_cache(
    object_store, make_bundle, tar_gz, bundle_root
):
    bundle = make_bundle(job_id="900")
    attempt = ingest(make_bundle, tar_gz, job_id="900")

    expected = sorted(
        f"bundles/{attempt.bundle}/{path.relative_to(bundle).as_posix()}"
        for path in bundle.rglob("*")
        if path.is_file()
    )
    assert object_store.stored() == expected
    assert not (bundle_root / attempt.bundle).exists()  # not in the local folder: only the cache holds a copy
    assert attempt.analysis_state == Attempt.Analysis.ANALYSED
    assert attempt.current_diagnosis.outcome == "attributed"
    cached = bundle_root / ".cache" / attempt.bundle.replace("/", "-")
    assert (cached / "attempt.json").read_bytes() == (bundle / "attempt.json").read_bytes()
    assert [p.name for p in (bundle_root / ".incoming").iterdir()] == []  # nothing staged is left


def test_the_diagnosis_is_the_engine_s_of_the_bundle_itself(object_store, make_bundle, tar_gz, diagnose_bundle):
    attempt = ingest(make_bundle, tar_gz, job_id="901")
    stored = attempt.current_diagnosis.document
    direct = diagnose_bundle(make_bundle(job_id="901"))
    assert {**stored, "ruleset": None} == {**direct, "ruleset": None}  # the stored pack's digest is its revision's


def test_evidence_excerpts_downloads_and_exports_read_the_store(
    object_store, make_bundle, tar_gz, client_for, api_client_for, tmp_path
):
    bundle = make_bundle(job_id="902")
    attempt = ingest(make_bundle, tar_gz, job_id="902")
    evidence = attempt.current_diagnosis.evidence.exclude(ref="").order_by("position").first()
    bundle_cache.trim(0)  # the excerpt and the download read the objects, not the cache

    lines = api_client_for(VIEWER).get(f"/api/v1/evidence/{evidence.pk}/excerpt", {"context": 2}).json()
    path, _, number = evidence.ref.rpartition(":")
    text = (bundle / path).read_text().splitlines()
    assert [line["text"] for line in lines] == text[int(number) - 3 : int(number) + 2]
    assert selectors.bundle_excerpt(attempt=attempt, ref="../../etc/passwd:1") == []
    assert selectors.bundle_excerpt(attempt=attempt, ref="logs/none.log:1") == []

    response = client_for(VIEWER, "page-viewer").get(f"/attempts/{attempt.pk}/bundle.tar.gz")
    assert response.status_code == 200
    with tarfile.open(fileobj=io.BytesIO(b"".join(response.streaming_content)), mode="r:gz") as archive:
        names = {member.name.partition("/")[2]: archive.extractfile(member).read() for member in archive}
    assert names == {p.relative_to(bundle).as_posix(): p.read_bytes() for p in bundle.rglob("*") if p.is_file()}

    bundle_store.export(attempt.bundle, tmp_path / "exported")
    assert (tmp_path / "exported" / "attempt.json").read_bytes() == (bundle / "attempt.json").read_bytes()


def test_the_cache_is_trimmed_to_its_size_and_keeps_what_is_held(object_store, make_bundle, tar_gz, settings):
    settings.FAULTLINE_BUNDLE_CACHE_BYTES = 0
    attempt = ingest(make_bundle, tar_gz, job_id="903")
    assert list(bundle_cache.cache_root().iterdir()) == []  # used, then removed: the cache holds nothing

    settings.FAULTLINE_BUNDLE_CACHE_BYTES = 1 << 30
    with bundle_store.local(attempt.bundle) as held:
        assert (held / "attempt.json").is_file()
        assert bundle_cache.trim(0) == []  # held: not removed
    assert held.is_dir()  # kept: within the cache's size
    assert bundle_cache.trim(0) == [held]


def test_retention_removes_the_objects_and_the_cached_copy(object_store, make_bundle, tar_gz):
    old = ingest(make_bundle, tar_gz, job_id="904", start=make_bundle.start - timedelta(days=30))
    recent = ingest(make_bundle, tar_gz, job_id="905")
    assert retention.bundles_prune(before=recent.start) == [old.pk]
    assert not bundle_store.exists(old.bundle)
    assert bundle_store.exists(recent.bundle)
    assert not any(key.startswith(f"bundles/{old.bundle}/") for key in object_store.stored())
    assert not (bundle_cache.cache_root() / old.bundle.replace("/", "-")).exists()


def test_an_unreachable_object_store_answers_503_and_stores_nothing(
    object_store, make_bundle, tar_gz, api_client_for, settings, staging_left
):
    settings.FAULTLINE_S3_ENDPOINT_URL = "http://127.0.0.1:9"  # nothing listens on the discard port
    settings.FAULTLINE_S3_TIMEOUT = 2
    response = api_client_for(TRIAGER).post(
        "/api/v1/attempts", tar_gz(make_bundle(job_id="906")), content_type="application/gzip"
    )
    assert response.status_code == 503
    assert response["Content-Type"] == "application/json"
    assert response["Retry-After"].isdigit()
    assert response.json()["error"]["code"] == "storage_unavailable"
    assert not Attempt.objects.exists()
    assert staging_left() == []
    settings.FAULTLINE_S3_ENDPOINT_URL = object_store.environment["FAULTLINE_S3_ENDPOINT_URL"]
    assert object_store.stored() == []


def test_a_worker_meeting_an_unreachable_store_retries_instead_of_failing(object_store, make_bundle, tar_gz, settings):
    attempt = attempts.attempt_ingest_archive(stream=io.BytesIO(tar_gz(make_bundle(job_id="907"))), analyse=False)
    bundle_cache.trim(0)
    settings.FAULTLINE_S3_ENDPOINT_URL = "http://127.0.0.1:9"
    settings.FAULTLINE_S3_TIMEOUT = 2
    from diagnoses.outages import AnalysisInterrupted

    with pytest.raises(AnalysisInterrupted) as interrupted:
        analysis.attempt_analyse(attempt_id=attempt.pk, from_queue=False)
    attempt.refresh_from_db()
    assert attempt.analysis_state == Attempt.Analysis.ANALYSING  # not failed: its task tries it again
    assert interrupted.value.outage.code == "storage_unavailable"

    settings.FAULTLINE_S3_ENDPOINT_URL = object_store.environment["FAULTLINE_S3_ENDPOINT_URL"]
    resumed = analysis.attempt_analyse(attempt_id=attempt.pk, from_queue=True, resume=interrupted.value.claimed)
    assert resumed is not None
    assert json.loads(resumed.document_json)["outcome"] == "attributed"
