"""The failure-pattern scenario of issue 24 (docs/leads.md): 30 attempts on 3 clusters fail with a wording no rule
knows, among 60 others (45 attributed to a GPU off the bus, 15 unattributed each with a wording of its own). Used by
``test_patterns.py`` (pages and API) and ``test_patterns_browser.py``."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

CLUSTERS = ("dgx-a", "dgx-b", "kube-c")
UNKNOWN_WORDS = (
    "fabricd[{pid}]: port {port} of switch sw-{switch} wedged: credit loop failure on lane {lane}, traffic halted"
)
OTHER_WORDS = ("alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliett", "kilo",
               "lima", "mike", "november", "oscar")  # fmt: skip
START = datetime(2026, 11, 2, 8, 0, tzinfo=UTC)
DOMAIN, SUBDOMAIN = "hardware", "nvswitch"


def scenario_bundles(write_bundle, root: Path) -> dict[str, list[Path]]:
    """The 90 bundles by kind: ``unknown`` (30), ``xid`` (45), ``other`` (15)."""
    kinds = ["unknown"] * 30 + ["xid"] * 45 + ["other"] * 15
    bundles: dict[str, list[Path]] = {"unknown": [], "xid": [], "other": []}
    for number, kind in enumerate(kinds):
        cluster = CLUSTERS[number % 3]
        start = START + timedelta(hours=number)
        nodes = [f"{cluster}-n{(number * 4 + k) % 40:02d}" for k in range(4)]
        faulty = nodes[number % 4]
        fault = start + timedelta(minutes=4, seconds=number)
        stamp = f"{fault:%b %e %H:%M:%S}"
        line = {
            "unknown": f"{stamp} {faulty} "
            + UNKNOWN_WORDS.format(pid=300 + number, port=number % 17, switch=number % 5, lane=number % 4),
            "xid": f"{stamp} {faulty} kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', name=<unknown>, "
            "GPU has fallen off the bus.",
            "other": f"{stamp} {faulty} site-agent[{number}]: probe {OTHER_WORDS[number % 15]} failed",
        }[kind]
        logs = {
            f"{node}/syslog.log": [f"{start + timedelta(seconds=1):%b %e %H:%M:%S} {node} kernel: eth0: link up"]
            + ([line] if node == faulty else [])
            for node in nodes
        }
        timeout = fault + timedelta(minutes=10)
        logs["train.log"] = [
            f"[rank{r}]:[E ProcessGroupNCCL.cpp:616] [Rank {r}] Watchdog caught collective operation timeout: "
            f"WorkNCCL(SeqNum=9, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600023 "
            f"milliseconds before timing out. {timeout:%Y-%m-%dT%H:%M:%SZ}"
            for r in range(8)
        ]
        bundles[kind].append(
            write_bundle(
                root / f"{number:03d}", logs=logs, cluster=cluster, job_id=str(5000 + number), nodes=nodes,
                start=f"{start:%Y-%m-%dT%H:%M:%SZ}", end=f"{start + timedelta(minutes=30):%Y-%m-%dT%H:%M:%SZ}",
            )
        )  # fmt: skip
    return bundles


def classified(rule_text: str) -> str:
    """The drafted rule with its domain and subdomain chosen, as a person does."""
    return rule_text.replace("    domain:  ", f"    domain: {DOMAIN}  ", 1).replace(
        "    subdomain:  ", f"    subdomain: {SUBDOMAIN}  ", 1
    )
