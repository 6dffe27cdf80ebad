"""Node logs read from log files on path templates (the ``logfiles`` kind)."""

from datetime import UTC, datetime

from connectors.logfiles import LogFileSource

START = datetime(2026, 11, 2, 10, 0, tzinfo=UTC)
END = datetime(2026, 11, 2, 11, 0, tzinfo=UTC)


def test_log_files_per_node_and_central(tmp_path):
    (tmp_path / "node01").mkdir()
    (tmp_path / "node01" / "syslog").write_text("line\n")
    (tmp_path / "central.log").write_text("many hosts\n")
    source = LogFileSource(
        "files",
        {
            "paths": {
                "syslog": f"{tmp_path}/{{node}}/syslog",
                "messages": f"{tmp_path}/central.log",
                "kern": f"{tmp_path}/none.log",
            }
        },
    )
    streams, reports = source.fetch_logs(["node01", "node02"], START, END)
    assert [(s.ref, s.node) for s in streams] == [("logs/messages.log", None), ("logs/node01/syslog.log", "node01")]
    by_name = {r.name: (r.status, r.detail) for r in reports}
    assert by_name["kern"][0] == "missing"
    assert by_name["messages"][0] == "ok"
    assert by_name["syslog"] == ("partial", f"files: 1 of 2 nodes; no file {tmp_path}/node02/syslog")
