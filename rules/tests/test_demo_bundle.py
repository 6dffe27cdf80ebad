"""``manage.py demo_bundle``: writes one demo bundle, lists the kinds, never clobbers a foreign directory."""

import io
import json

import pytest
from django.core.management import call_command

from demo.bundles import KINDS


def run(*args):
    out = io.StringIO()
    call_command("demo_bundle", *args, stdout=out)
    return out.getvalue()


@pytest.mark.django_db  # diagnose reads the active rule set when the database has one
def test_it_writes_a_gpu_off_the_bus_bundle_by_default_and_prints_its_path(tmp_path):
    target = tmp_path / "bundle"

    printed = run(str(target))

    assert printed.strip() == str(target)
    assert (target / "attempt.json").is_file()
    diagnosis = io.StringIO()
    call_command("diagnose", str(target), stdout=diagnosis)
    assert '"subdomain": "gpu.bus"' in diagnosis.getvalue()


def test_list_names_every_kind():
    listed = run("--list").splitlines()

    assert [line.split()[0] for line in listed] == list(KINDS)


def test_a_second_bundle_replaces_the_first_in_the_same_directory(tmp_path):
    run(str(tmp_path), "--kind", "gpu-ecc-dbe", "--seed", "1")  # a Slurm job: logs/slurm-<job>.out
    run(str(tmp_path), "--kind", "k8s-oomkilled", "--seed", "1")

    assert not list(tmp_path.glob("logs/slurm-*.out"))
    assert (tmp_path / "events" / "kubernetes.json").is_file()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--kind", "gpu-melted"], "unknown kind 'gpu-melted'"),
        ([], "is not empty and holds no bundle"),
    ],
)
def test_bad_arguments_exit_2_with_one_line(tmp_path, capsys, args, message):
    (tmp_path / "notes.txt").write_text("mine")

    with pytest.raises(SystemExit) as exited:
        run(str(tmp_path), *args)

    assert exited.value.code == 2
    assert message in capsys.readouterr().err
    assert (tmp_path / "notes.txt").read_text() == "mine"


def test_demo_cases_writes_every_kind_with_its_intended_diagnosis(tmp_path):
    out = io.StringIO()
    call_command("demo_cases", str(tmp_path / "cases"), "--seeds", "1", stdout=out)

    cases = sorted((tmp_path / "cases").iterdir())
    assert [case.name for case in cases] == [f"{kind}-1" for kind in sorted(KINDS)]
    expected = json.loads((tmp_path / "cases" / "gpu-fallen-off-bus-1" / "expected.json").read_text())
    assert (expected["outcome"], expected["subdomain"]) == ("attributed", "gpu.bus")
    assert len(expected["nodes"]) == 1


def test_demo_cases_refuses_a_directory_holding_other_things(tmp_path):
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(SystemExit) as exited:
        call_command("demo_cases", str(tmp_path), "--seeds", "1")
    assert exited.value.code == 2
    assert (tmp_path / "notes.txt").exists()
