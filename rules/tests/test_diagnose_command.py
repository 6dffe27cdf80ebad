"""`manage.py diagnose` as docs/diagnosis.md ("The command") specifies it: run as a real process, no database."""

import json

import pytest

XID_79 = {
    "node02/syslog.log": ["Nov  2 10:14:07 node02 kernel: NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus."]
}


def test_prints_the_diagnosis_json_and_exits_0(tmp_path, write_bundle, diagnose_command):
    done = diagnose_command(str(write_bundle(tmp_path, logs=XID_79)))
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["schema"] == "faultline.diagnosis/v1"
    assert (result["outcome"], result["subdomain"], result["root_cause"]["nodes"]) == (
        "attributed",
        "gpu.bus",
        ["node02"],
    )
    assert result["ruleset"]["name"] == "default"


def test_output_is_byte_identical_across_runs(tmp_path, write_bundle, diagnose_command):
    bundle = str(write_bundle(tmp_path, logs=XID_79))
    assert diagnose_command(bundle).stdout == diagnose_command(bundle).stdout


def test_text_format_is_a_readable_report(tmp_path, write_bundle, diagnose_command):
    done = diagnose_command(str(write_bundle(tmp_path, logs=XID_79)), "--format", "text")
    assert done.returncode == 0
    assert "ATTRIBUTED" in done.stdout
    assert "hardware/gpu.bus on node02" in done.stdout
    assert "logs/node02/syslog.log:1" in done.stdout


def test_rules_option_takes_a_rule_file(tmp_path, write_bundle, diagnose_command):
    rules = tmp_path / "mine.yaml"
    rules.write_text(
        "rules:\n  - id: mine\n    description: mine\n    streams: [system]\n    pattern: 'fallen off'\n"
        "    role: cause\n    domain: hardware\n    subdomain: gpu\n"
    )
    done = diagnose_command(str(write_bundle(tmp_path / "b", logs=XID_79)), "--rules", str(rules))
    result = json.loads(done.stdout)
    assert (result["root_cause"]["rule"], result["ruleset"]["name"]) == ("mine", "mine")


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda p: p / "missing", "not a directory"),
        (lambda p: p, "attempt.json: missing"),
        (lambda p: (p / "attempt.json").write_text("{oops") and p, "not valid JSON"),
        (lambda p: (p / "attempt.json").write_text('{"cluster": "c"}') and p, "missing required field 'scheduler'"),
    ],
)
def test_an_unusable_bundle_exits_2_with_one_line_on_stderr(tmp_path, make, message, diagnose_command):
    done = diagnose_command(str(make(tmp_path)))
    assert done.returncode == 2
    assert done.stdout == ""
    assert len(done.stderr.strip().splitlines()) == 1
    assert message in done.stderr


def test_invalid_rules_exit_2_naming_file_and_line(tmp_path, write_bundle, diagnose_command):
    rules = tmp_path / "bad.yaml"
    rules.write_text(
        "rules:\n  - id: bad\n    description: x\n    streams: [system]\n    pattern: '(unclosed'\n    role: context\n"
    )
    done = diagnose_command(str(write_bundle(tmp_path / "b", logs=XID_79)), "--rules", str(rules))
    assert done.returncode == 2
    assert "bad.yaml:5: rule 'bad', field 'pattern'" in done.stderr


def test_without_a_database_it_loads_neither_the_apps_nor_celery(tmp_path, write_bundle, diagnose_command):
    """Its start-up is Python's and the engine's (docs/performance.md): no app registry, Celery or ORM."""
    heavy = ("celery", "django.contrib.admin", "rest_framework", "django.db.models", "diagnoses.models")
    probe = (
        "import runpy, sys\n"
        "runpy.run_path('manage.py', run_name='__main__')\n"
        f"sys.stderr.write('loaded: ' + ' '.join(m for m in {heavy!r} if m in sys.modules))\n"
    )
    bundle = str(write_bundle(tmp_path, logs=XID_79))
    done = diagnose_command(bundle, script=("-c", probe))
    assert done.returncode == 0, done.stderr
    assert done.stdout == diagnose_command(bundle).stdout
    assert done.stderr.splitlines()[-1] == "loaded: "


UNKNOWN_WORDING = {
    "node03/syslog.log": [
        "Nov  2 10:14:07 node03 fabricd[311]: port 4 of switch sw-7 wedged: credit loop failure on lane 3",
        "Nov  2 10:14:09 node03 systemd[1]: Started session 4.",
    ]
}


def test_leads_option_adds_the_leads_and_leaves_the_rest_as_it_was(tmp_path, write_bundle, diagnose_command):
    bundle = str(write_bundle(tmp_path, logs=UNKNOWN_WORDING))
    plain = diagnose_command(bundle)
    with_leads = diagnose_command(bundle, "--leads")
    assert with_leads.returncode == 0, with_leads.stderr
    result = json.loads(with_leads.stdout)
    leads = result.pop("leads")
    assert result == json.loads(plain.stdout)
    assert "leads" not in json.loads(plain.stdout)
    assert leads[0]["text"].endswith("credit loop failure on lane 3")
    assert {k: leads[0][k] for k in ("node", "stream", "file", "line")} == {
        "node": "node03",
        "stream": "syslog",
        "file": "logs/node03/syslog.log",
        "line": 1,
    }
    assert leads[0]["score"] > 0
    assert "failed" in leads[0]["why"]
    assert diagnose_command(bundle, "--leads").stdout == with_leads.stdout
    text = diagnose_command(bundle, "--leads", "--format", "text").stdout
    assert "Leads (lines no rule knows yet)" in text
    assert "logs/node03/syslog.log:1" in text
