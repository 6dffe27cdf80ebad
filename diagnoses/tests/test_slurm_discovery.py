"""Live discovery end to end on the real single-node Slurm cluster (scripts/slurm.sh), with the real
Prometheus (scripts/prometheus.sh) as the cluster's metric source: real jobs, one exiting 1 after NCCL
errors and one cancelled, are discovered, gathered, diagnosed and stored exactly once."""

import os
import time

import pytest

from access.roles import VIEWER
from diagnoses.models import Attempt, Diagnosis
from diagnoses.services import clusters
from diagnoses.tasks import poll_cluster

pytestmark = [
    pytest.mark.slurm,
    pytest.mark.prometheus,
    pytest.mark.skipif(os.geteuid() != 0, reason="the Slurm tests run a real Slurm cluster, which needs root"),
    pytest.mark.django_db,
]


@pytest.fixture(scope="module")
def slurm_jobs(slurm, tmp_path_factory):
    """Two real jobs: one fails (exit 1 after NCCL errors), one is cancelled while it runs."""
    out = tmp_path_factory.mktemp("discovery-jobs")
    out.chmod(0o777)
    (out / "fail.sh").write_text(slurm.FAIL_JOB)
    (out / "sleep.sh").write_text(slurm.SLEEP_JOB)

    def sbatch(name: str, script: str, *options: str) -> str:
        command = ["sbatch", "--parsable", f"--job-name={name}", f"--output={out}/%x-%j.out", f"--chdir={out}"]
        return slurm.run(*command, *options, str(out / script)).split(";")[0]

    failed = sbatch("discover-fail", "fail.sh", f"--error={out}/%x-%j.err")
    cancelled = sbatch("discover-cancel", "sleep.sh")
    slurm.wait_for([cancelled], {"RUNNING"}, 60)
    slurm.run("scancel", cancelled)
    slurm.wait_for([failed, cancelled], {"FAILED", "CANCELLED"}, 120)
    return {"failed": failed, "cancelled": cancelled, "out": out}


def test_real_slurm_jobs_are_discovered_gathered_diagnosed_and_stored_once(
    slurm_jobs,
    prometheus_url,
    django_capture_on_commit_callbacks,
    tmp_path,
    bundle_root,
    exported_diagnosis,
    api_client_for,
):
    cluster = clusters.cluster_configure(
        name="slurm-lab",
        connector="slurm",
        scheduler_settings={"lookback_seconds": 900},
        enabled=True,
        gather_delay=0,
        sources=[
            {"role": "logs", "name": "syslog", "kind": "logfiles",
             "settings": {"paths": {"syslog": f"{slurm_jobs['out']}/syslog/{{node}}.log"}}},
            {"role": "metrics", "name": "prometheus", "kind": "prometheus", "settings": {"url": prometheus_url}},
        ],
    )  # fmt: skip
    jobs = {slurm_jobs["failed"], slurm_jobs["cancelled"]}
    deadline = time.monotonic() + 60
    while not jobs <= set(Attempt.objects.values_list("job__job_id", flat=True)):  # accounting may trail the jobs
        assert time.monotonic() < deadline, f"discovery did not find jobs {sorted(jobs)}"
        with django_capture_on_commit_callbacks(execute=True):
            poll_cluster.apply(args=[cluster.pk])
        time.sleep(1)
    cluster.refresh_from_db()
    assert (cluster.failures, cluster.last_error) == (0, "")

    failed = Attempt.objects.get(job__job_id=slurm_jobs["failed"])
    cancelled = Attempt.objects.get(job__job_id=slurm_jobs["cancelled"])
    for attempt in (failed, cancelled):
        assert (attempt.cluster.name, attempt.scheduler, attempt.number) == ("slurm-lab", "slurm", 0)
        assert attempt.analysis_state == "analysed", attempt.analysis_error
        assert attempt.gathered is not None
    assert (failed.state, failed.exit_code, failed.reason) == ("FAILED", "1:0", "NonZeroExitCode")
    assert (cancelled.state, cancelled.reason) == ("CANCELLED", "cancelled by uid 0")
    assert failed.discovery["stdout"] == f"{slurm_jobs['out']}/discover-fail-{slurm_jobs['failed']}.out"

    verdict = cancelled.current_diagnosis
    assert (verdict.outcome, verdict.domain, verdict.subdomain) == ("attributed", "scheduler", "cancelled")
    diagnosis = failed.current_diagnosis
    assert diagnosis.domain != "scheduler"
    stdout_evidence = diagnosis.evidence.filter(ref__startswith="logs/stdout.out:").first()
    assert stdout_evidence is not None
    lines = api_client_for(VIEWER).get(f"/api/v1/evidence/{stdout_evidence.pk}/excerpt", {"context": 5}).json()
    assert any("RuntimeError: NCCL error" in line["text"] for line in lines)
    stored = bundle_root / failed.bundle
    assert "ncclSystemError" in (stored / "logs" / "stderr.err").read_text()
    sources = {(s["name"], s["status"]) for s in diagnosis.document["sources"]}
    assert {("stdout", "ok"), ("stderr", "ok"), ("syslog", "missing"), ("xid", "missing")} <= sources
    assert exported_diagnosis(failed, tmp_path / "out") == diagnosis.document_json

    counts = (Attempt.objects.count(), Diagnosis.objects.count())
    with django_capture_on_commit_callbacks(execute=True):
        assert poll_cluster.apply(args=[cluster.pk]).get() == 0  # the overlap finds them again: nothing new
    assert (Attempt.objects.count(), Diagnosis.objects.count()) == counts
    assert Attempt.objects.filter(job__job_id__in=jobs).count() == 2
