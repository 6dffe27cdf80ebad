"""Pages benchmark: the triage pages over loopback against a million stored attempts.

    python bench/pages.py [--attempts 1000000] [--requests 60] [--keep] [--reuse]

It recreates the database ``faultline_pages_bench`` (``--database-url`` to change), migrates it and
seeds it by bulk insert (PostgreSQL COPY): clusters and nodes, one job and one attempt per job
(4 nodes each; a few of 1,024 nodes), a diagnosis per analysed attempt with about 10 evidence rows
and 10 node events (thousands for the 1,024-node attempts), root-cause nodes, and each attempt's verdict of
record (5% of the analysed ones reviewed). Then it serves the app with gunicorn on 127.0.0.1, signs in
and times each page (p50, p95 of ``--requests`` requests after a warm-up): the job list unfiltered and
with each filter, a page deep in the list, the triage queue, the attempt page of a 1,024-node attempt, a
node page, the overview and a Prometheus scrape of /metrics (collected at each request: no cache), each request
right after one of the unfiltered job list, the reference whose median each page's is divided by (a shared machine's
load changes during a run). The seed's daily rollups (``manage.py verdict_days``) are built after it. The
database is dropped at the end unless ``--keep``; ``--reuse`` migrates an existing seeded database and measures it
again.
Results belong in
docs/performance.md, section "Pages". Not run in CI.
"""

from __future__ import annotations

import argparse
import base64
import io
import json
import os
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parents[1]
CLUSTERS = [
    ("dgx-a", "dgx-a", 0.5),
    ("dgx-b", "dgx-b", 0.25),
    ("gke-ml", "gke-ml-a3u-pool-", 0.15),
    ("eos", "eos", 0.1),
]
NODES_PER_CLUSTER = 2000
NODES_PER_ATTEMPT = 4
LARGE_ATTEMPTS = 10  # attempts of 1,024 nodes (spread through the table)
LARGE_NODES = 1024
USERS = [f"user{n:03d}" for n in range(200)]
MODELS = [f"{family}-{size}-{task}" for family in ("llama3", "mixtral", "gpt", "t5", "bert", "vit", "qwen2", "dit")
          for size in ("8b", "70b", "13b", "xl", "h14") for task in ("pretrain", "sft", "dpo")][:60]  # fmt: skip
OUTCOMES = [("attributed", 0.80), ("unattributed", 0.12), ("ambiguous", 0.05), (None, 0.03)]
CAUSES = [  # domain, subdomain, rule, on a node, weight
    ("hardware", "gpu.bus", "gpu.xid.fallen_off_bus", True, 10), ("hardware", "gpu.memory", "gpu.xid.memory", True, 10),
    ("hardware", "gpu.nvlink", "gpu.xid.nvlink", True, 6), ("hardware", "host.memory", "host.mce", True, 3),
    ("network", "link.infiniband", "ib.link_down", True, 8), ("network", "switch", "ib.switch", False, 2),
    ("storage", "filesystem", "lustre.error", False, 6), ("software", "nccl", "nccl.internal", False, 4),
    ("application", "exception", "python.exception", True, 12), ("application", "cuda_oom", "cuda.oom", True, 10),
    ("application", "host_oom", "host.oom_kill", True, 6), ("scheduler", "time_limit", "slurm.time_limit", False, 10),
    ("scheduler", "preemption", "slurm.preempted", False, 5),
    ("infrastructure", "node_lost", "slurm.node_fail", True, 8),
]  # fmt: skip
REVIEWED = 0.05  # the share of analysed attempts with a review
ROLES = ["root_cause", "cascade", "cascade", "cascade", "teardown", "teardown", "teardown", "context", "context"]
NOW = datetime.now(tz=UTC).replace(microsecond=0)
DAYS = 365


# Seeding -----------------------------------------------------------------------------------------


class Table:
    """Rows for one table, written with COPY in chunks (text format; the generated values need no escaping)."""

    def __init__(self, cursor, name: str, columns: str):
        self.cursor, self.name, self.columns = cursor, name, columns
        self.buffer = io.StringIO()
        self.rows = 0

    def add(self, *values) -> None:
        self.buffer.write("\t".join(r"\N" if v is None else str(v) for v in values))
        self.buffer.write("\n")
        self.rows += 1
        if self.buffer.tell() > 8 << 20:
            self.flush()

    def flush(self) -> None:
        data = self.buffer.getvalue()
        if data:
            with self.cursor.copy(f"COPY {self.name} ({self.columns}) FROM STDIN") as copy:
                copy.write(data)
        self.buffer = io.StringIO()


def pick(rnd: random.Random, weighted):
    return rnd.choices([w[:-1] if len(w) > 2 else w[0] for w in weighted], [w[-1] for w in weighted])[0]


def seed(connection, attempts: int) -> dict:
    """Write the rows; return what the scenarios need (names of nodes, users, large attempts)."""
    rnd = random.Random(42)
    cursor = connection.cursor()
    cursor.execute("SET session_replication_role = replica")  # no foreign-key triggers during the load
    tables = ["diagnoses_job", "diagnoses_attempt", "diagnoses_attempt_nodes", "diagnoses_diagnosis",
              "diagnoses_diagnosis_root_cause_nodes", "diagnoses_evidence", "diagnoses_nodeevent",
              "diagnoses_attempt_verdict_nodes", "diagnoses_review"]  # fmt: skip
    indexes = secondary_indexes(cursor, tables)
    for name, _ in indexes:
        cursor.execute(f'DROP INDEX "{name}"')
    for table in ("diagnoses_evidence", "diagnoses_nodeevent"):  # the seeded times are exact, never approximate
        cursor.execute(f"ALTER TABLE {table} ALTER COLUMN time_approx SET DEFAULT false")
    stamp = NOW.isoformat()
    cursor.execute("INSERT INTO rules_ruleset (id, name, description, created) VALUES (1, 'default', '', %s)", [stamp])
    cursor.execute(
        "INSERT INTO rules_rulesetrevision (id, number, text, digest, message, created, active, ruleset_id)"
        " VALUES (1, 1, '', 'sha256:bench', '', %s, true, 1)",
        [stamp],
    )
    node_names = {}
    for index, (cluster, prefix, _) in enumerate(CLUSTERS, start=1):
        cursor.execute(
            "INSERT INTO diagnoses_cluster (id, name, connector, created, scheduler_settings, enabled, poll_interval, "
            "gather_delay, cursor, last_error, failures, last_found, skipped) "
            "VALUES (%s, %s, 'uploads', %s, '{}', false, 300, 60, '', '', 0, 0, '[]')",
            [index, cluster, stamp],
        )
        names = [f"{prefix}{k:04d}" for k in range(NODES_PER_CLUSTER)]
        node_names[index] = names
        cursor.executemany(
            "INSERT INTO diagnoses_node (id, cluster_id, name) VALUES (%s, %s, %s)",
            [((index - 1) * NODES_PER_CLUSTER + k + 1, index, name) for k, name in enumerate(names)],
        )
    jobs = Table(cursor, "diagnoses_job", 'id, cluster_id, job_id, scheduler, name, "user"')
    attempt_rows = Table(
        cursor,
        "diagnoses_attempt",
        'id, number, scheduler, state, start, "end", exit_code, reason, "user", name, record, bundle, analysis_state, '
        "analysis_error, analysis_runs, received, state_changed, analysis_started, cluster_id, current_diagnosis_id, "
        "job_id, verdict_source, verdict_outcome, verdict_domain, verdict_subdomain, verdict_review_id, "
        "engine_disagrees, needs_review",
    )
    verdict_nodes = Table(cursor, "diagnoses_attempt_verdict_nodes", "id, attempt_id, node_id")
    review_rows = Table(
        cursor,
        "diagnoses_review",
        "id, created, verdict, corrected_outcome, corrected_domain, corrected_subdomain, corrected_nodes, note, "
        "picked_candidate, diagnosis_id, reviewer_id",
    )
    cursor.execute(
        "INSERT INTO auth_user (id, password, is_superuser, username, first_name, last_name, email, is_staff, "
        "is_active, date_joined) VALUES (1, '!', false, 'reviewer', '', '', '', false, true, %s)",
        [stamp],
    )
    attempt_nodes = Table(cursor, "diagnoses_attempt_nodes", "id, attempt_id, node_id")
    diagnoses = Table(
        cursor,
        "diagnoses_diagnosis",
        "id, outcome, domain, subdomain, root_cause_rule, document_json, created, attempt_id, revision_id",
    )
    root_nodes = Table(cursor, "diagnoses_diagnosis_root_cause_nodes", "id, diagnosis_id, node_id")
    evidence = Table(
        cursor,
        "diagnoses_evidence",
        'id, "position", role, rule, source, time, ref, text, count, diagnosis_id, node_id',
    )
    events = Table(
        cursor, "diagnoses_nodeevent", "id, time, source, kind, rule, role, text, ref, count, diagnosis_id, node_id"
    )
    large = set(range(attempts // LARGE_ATTEMPTS // 2, attempts, max(attempts // LARGE_ATTEMPTS, 1)))
    ids = {"attempt_node": 0, "root": 0, "evidence": 0, "event": 0, "review": 0}
    cluster_weights = [c[2] for c in CLUSTERS]
    began = time.perf_counter()
    for pk in range(1, attempts + 1):
        cluster = rnd.choices(range(1, len(CLUSTERS) + 1), cluster_weights)[0]
        slurm = CLUSTERS[cluster - 1][0] != "gke-ml"
        model = MODELS[int(rnd.paretovariate(1.2)) % len(MODELS)]
        user = USERS[int(rnd.paretovariate(1.1)) % len(USERS)]
        job_id = str(4_000_000 + pk) if slurm else f"job-{model}-{pk:x}"
        end = NOW - timedelta(seconds=int(DAYS * 86400 * (1 - pk / attempts)) + rnd.randrange(60))
        start = end - timedelta(minutes=rnd.randrange(10, 2000))
        size = LARGE_NODES if pk in large else NODES_PER_ATTEMPT
        first = rnd.randrange(NODES_PER_CLUSTER - size)
        node_ids = [(cluster - 1) * NODES_PER_CLUSTER + first + k + 1 for k in range(size)]
        names = node_names[cluster][first : first + size]
        outcome = pick(rnd, OUTCOMES)
        domain = subdomain = rule = ""
        on_node = False
        if outcome == "attributed":
            domain, subdomain, rule, on_node = pick(rnd, CAUSES)
        elif outcome == "ambiguous":
            domain, subdomain = "hardware", "ambiguous"
        state = {"scheduler": "TIMEOUT", "infrastructure": "NODE_FAIL"}.get(domain, "FAILED") if slurm else "Failed"
        jobs.add(pk, cluster, job_id, "slurm" if slurm else "kueue", model, user)
        record = json.dumps({"cluster": CLUSTERS[cluster - 1][0], "job_id": job_id, "attempt": 0, "state": state})
        # the verdict of record: a review for REVIEWED of the analysed attempts (a confirmation), else the diagnosis
        reviewed = bool(outcome) and rnd.random() < REVIEWED
        if reviewed:
            ids["review"] += 1
            review_rows.add(ids["review"], end.isoformat(), "confirmed", "", "", "", "[]", "", "f", pk, 1)
        source = ("review" if reviewed else "engine") if outcome else ""
        waiting = outcome in ("ambiguous", "unattributed") and not reviewed
        attempt_rows.add(
            pk, 0, "slurm" if slurm else "kueue", state, start.isoformat(), end.isoformat(), "1:0", "", user, model,
            record, f"bench/{pk}", "analysed" if outcome else "received", "", 1, end.isoformat(), end.isoformat(),
            end.isoformat(), cluster, pk if outcome else None, pk, source, outcome or "", domain, subdomain,
            ids["review"] if reviewed else None, "f", "t" if waiting else "f",
        )  # fmt: skip
        for node in node_ids:
            ids["attempt_node"] += 1
            attempt_nodes.add(ids["attempt_node"], pk, node)
        if not outcome:
            continue
        faulty = rnd.randrange(size)
        fault_time = end - timedelta(seconds=rnd.randrange(30, 900))
        document = diagnosis_document(
            CLUSTERS[cluster - 1][0], job_id, outcome, domain, subdomain, rule, names, faulty, on_node, fault_time
        )
        diagnoses.add(pk, outcome, domain, subdomain, rule, document, end.isoformat(), pk, 1)
        if on_node:
            ids["root"] += 1
            root_nodes.add(ids["root"], pk, node_ids[faulty])
            verdict_nodes.add(ids["root"], pk, node_ids[faulty])
        for position in range(10):
            role = "root_cause" if position == 0 and outcome == "attributed" else ROLES[1 + position % 8]
            k = faulty if role == "root_cause" else (faulty + position) % size
            moment = fault_time + timedelta(seconds=position * 7)
            ref = f"logs/{names[k]}/syslog.log:{1000 + position * 37}"
            text = log_line(rnd, moment, names[k], role, rule)
            line_rule = rule if role == "root_cause" else f"bench.{role}"
            ids["evidence"] += 1
            evidence.add(ids["evidence"], position, role, line_rule, "syslog", moment.isoformat(), ref, text, 1, pk,
                         node_ids[k])  # fmt: skip
            ids["event"] += 1
            events.add(ids["event"], moment.isoformat(), "syslog", "system", line_rule, role, text, ref, 1, pk,
                       node_ids[k])  # fmt: skip
        if size == LARGE_NODES:  # every rank of every node times out: thousands of cascade events
            for k, node in enumerate(node_ids):
                for rank in range(10):
                    moment = fault_time + timedelta(seconds=600 + rank)
                    ids["event"] += 1
                    events.add(
                        ids["event"], moment.isoformat(), "train", "app", "nccl.watchdog_timeout", "cascade",
                        f"[rank{k * 8 + rank % 8}]: Watchdog caught collective operation timeout: WorkNCCL(SeqNum=9)",
                        f"logs/train.log:{k * 10 + rank + 1}", 1, pk, node,
                    )  # fmt: skip
        if pk % 100_000 == 0:
            print(f"  {pk:,} attempts written ({time.perf_counter() - began:.0f} s)", flush=True)
    written = (jobs, attempt_rows, attempt_nodes, diagnoses, root_nodes, evidence, events, verdict_nodes, review_rows)
    for table in written:
        table.flush()
    print("  rows: " + ", ".join(f"{table.name.removeprefix('diagnoses_')} {table.rows:,}" for table in written))
    began = time.perf_counter()
    for _, definition in indexes:
        cursor.execute(definition)
    print(f"  {len(indexes)} secondary indexes rebuilt in {time.perf_counter() - began:.0f} s")
    for table in [
        "diagnoses_cluster",
        "diagnoses_node",
        *tables,
        "rules_ruleset",
        "rules_rulesetrevision",
        "auth_user",
    ]:
        cursor.execute(f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), (SELECT max(id) FROM {table}))")
    began = time.perf_counter()
    seed_patterns(cursor)
    print(f"  failure patterns and leads written in {time.perf_counter() - began:.0f} s")
    cursor.execute("SET session_replication_role = DEFAULT")
    connection.commit()
    return {"large": sorted(large)}


PATTERNS = 2_000  # templates among the leads of the attempts the rules did not settle


def seed_patterns(cursor) -> None:
    """The template store and the leads (docs/leads.md) of every unattributed or ambiguous attempt: three pattern
    leads each, their templates drawn with a long tail (a few patterns lead many attempts, most lead a handful), and
    the patterns' counts as the analyses keep them."""
    cursor.execute("SELECT setseed(0.42)")
    cursor.execute(
        "INSERT INTO diagnoses_template (id, key, text, kind, stream, lines, normal_lines, attempts, first_seen, "
        "last_seen, status) SELECT n, lpad(to_hex(n * 2654435761 %% 4294967296), 16, '0'), 'site-agent[<NUM>]: '"
        " || 'probe ' || n || ' failed on <HOST>: error <NUM> at <PATH>', 'system', 'syslog', 10 * n, n %% 7, 0, "
        "%s, %s, CASE WHEN n %% 10 = 0 THEN 'known' ELSE 'new' END FROM generate_series(1, %s) n",
        [(NOW - timedelta(days=30)).isoformat(), NOW.isoformat(), PATTERNS],
    )
    cursor.execute(
        "INSERT INTO diagnoses_leadset (diagnosis_id, attempt_id, requested, current, templates, computed) "
        'SELECT current_diagnosis_id, id, false, true, %s, "end" FROM diagnoses_attempt '
        "WHERE verdict_outcome IN ('unattributed', 'ambiguous') AND current_diagnosis_id IS NOT NULL",
        [PATTERNS],
    )
    cursor.execute(
        "INSERT INTO diagnoses_lead (lead_set_id, position, template_id, score, why, normal, node, stream, ref, text, "
        "time, day_attempts) SELECT s.id, p, 1 + ((floor(%s * power(random(), 3))::int + p * 7) %% %s), "
        "0.5 / p, 'error-like wording (failed); 1 line; on 1 of 8 nodes', 0, '', 'syslog', "
        "'logs/node/syslog.log:' || p, 'site-agent[42]: probe failed', s.computed, NULL "
        "FROM diagnoses_leadset s CROSS JOIN generate_series(1, 3) p",
        [PATTERNS, PATTERNS],
    )
    cursor.execute(
        "UPDATE diagnoses_template t SET attempts = c.n FROM (SELECT template_id, count(*) n FROM diagnoses_lead "
        "GROUP BY 1) c WHERE c.template_id = t.id"
    )
    cursor.execute(
        "INSERT INTO diagnoses_templatecluster (template_id, cluster_id, attempts) SELECT l.template_id, a.cluster_id, "
        "count(*) FROM diagnoses_lead l JOIN diagnoses_leadset s ON s.id = l.lead_set_id JOIN diagnoses_attempt a "
        "ON a.id = s.attempt_id GROUP BY 1, 2"
    )
    for table in ("diagnoses_template", "diagnoses_leadset", "diagnoses_lead", "diagnoses_templatecluster"):
        cursor.execute(f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), (SELECT max(id) FROM {table}))")


def secondary_indexes(cursor, tables: list[str]) -> list[tuple[str, str]]:
    """The indexes of ``tables`` that back no constraint (dropped for the load, built again after)."""
    cursor.execute(
        """SELECT i.indexname, i.indexdef FROM pg_indexes i
           WHERE i.tablename = ANY(%s) AND i.schemaname = 'public'
             AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conname = i.indexname)""",
        [tables],
    )
    return cursor.fetchall()


def diagnosis_document(cluster, job_id, outcome, domain, subdomain, rule, names, faulty, on_node, time) -> str:
    root = None
    if outcome == "attributed":
        root = {"rule": rule, "nodes": [names[faulty]] if on_node else [], "time": time.isoformat(),
                "summary": f"{rule} on {names[faulty]}", "action": "DRAIN_AND_RESET"}  # fmt: skip
    document = {
        "schema": "faultline.diagnosis/v1",
        "attempt": {"cluster": cluster, "job_id": job_id, "attempt": 0},
        "outcome": outcome,
        "domain": domain or None,
        "subdomain": subdomain or None,
        "root_cause": root,
        "candidates": [],
        "affected_nodes": [names[faulty]],
        "symptoms": [
            {
                "rule": "nccl.watchdog_timeout",
                "role": "cascade",
                "nodes": names[:8],
                "count": 8 * len(names),
                "first": time.isoformat(),
                "summary": "The NCCL watchdog caught a collective that timed out",
            },
            {
                "rule": "torchrun.signal",
                "role": "teardown",
                "nodes": names[:8],
                "count": len(names),
                "first": time.isoformat(),
                "summary": "torchrun tears the remaining workers down",
            },
        ],  # fmt: skip
        "evidence": [],
        "sources": [
            {"name": "syslog", "kind": "system", "status": "ok", "detail": f"{len(names)} nodes, 18,204 lines"},
            {"name": "metrics", "kind": "metrics", "status": "missing", "detail": "no Prometheus configured"},
        ],
        "ruleset": {"name": "default", "version": "1", "digest": "sha256:bench"},
    }
    return json.dumps(document, indent=2).replace("\n", "\\n")  # COPY text format: an escaped newline


def log_line(rnd: random.Random, moment: datetime, node: str, role: str, rule: str) -> str:
    clock = moment.strftime("%b %e %H:%M:%S")
    if role == "root_cause":
        return f"{clock} {node} kernel: NVRM: Xid (PCI:0000:{rnd.randrange(256):02x}:00): 79, pid=<unknown>, GPU has fallen off the bus ({rule})"  # noqa: E501
    if role == "cascade":
        return f"{clock} {node} python[{rnd.randrange(99999)}]: [E ProcessGroupNCCL.cpp:616] Watchdog caught collective operation timeout: WorkNCCL(SeqNum={rnd.randrange(9999)}, OpType=ALLREDUCE)"  # noqa: E501
    if role == "teardown":
        return f"{clock} {node} torchrun[{rnd.randrange(99999)}]: Sending process {rnd.randrange(99999)} closing signal SIGTERM"  # noqa: E501
    return f"{clock} {node} kernel: mlx5_core 0000:{rnd.randrange(256):02x}:00.0: poll_health: CQE ok"


# Measuring ---------------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def scenarios(connection, seeded: dict) -> list[tuple[str, str, list[str]]]:
    """(group, name, URLs) to time; each request takes the next URL of its list."""
    cursor = connection.cursor()
    cursor.execute("SELECT count(*) / 2 FROM diagnoses_attempt")
    half = cursor.fetchone()[0]
    cursor.execute('SELECT "end", id FROM diagnoses_attempt ORDER BY "end" DESC, id DESC OFFSET %s LIMIT 1', [half])
    deep = cursor.fetchone()
    cursor_value = base64.urlsafe_b64encode(json.dumps([deep[0].isoformat(), deep[1]]).encode()).decode().rstrip("=")
    cursor.execute("SELECT n.name FROM diagnoses_node n WHERE n.cluster_id = 1 ORDER BY n.id LIMIT 10 OFFSET 100")
    nodes = [row[0] for row in cursor.fetchall()]
    cursor.execute(
        "SELECT c.name, n.name, count(*) FROM diagnoses_attempt_verdict_nodes r JOIN diagnoses_node n ON "
        "n.id = r.node_id JOIN diagnoses_cluster c ON c.id = n.cluster_id GROUP BY 1, 2 ORDER BY 3 DESC LIMIT 10"
    )
    offenders = cursor.fetchall()
    cursor.execute("SELECT job_id FROM diagnoses_job ORDER BY id DESC OFFSET 1000 LIMIT 10")
    job_ids = [row[0] for row in cursor.fetchall()]
    cursor.execute("SELECT key FROM diagnoses_template ORDER BY attempts DESC, id LIMIT 5")
    patterns = [row[0] for row in cursor.fetchall()]
    week = (NOW - timedelta(days=7)).strftime("%Y-%m-%dT%H:%M")
    jobs = "/jobs/"
    return [
        ("list", "job list, unfiltered", [jobs]),
        ("list", "cluster", [f"{jobs}?cluster=dgx-b", f"{jobs}?cluster=eos"]),
        ("list", "outcome", [f"{jobs}?outcome=ambiguous", f"{jobs}?outcome=unattributed"]),
        ("list", "domain", [f"{jobs}?domain=network", f"{jobs}?domain=storage"]),
        ("list", "subdomain", [f"{jobs}?subdomain=gpu.nvlink", f"{jobs}?subdomain=host.memory"]),
        ("list", "node (ran on it)", [f"{jobs}?node={name}" for name in nodes]),
        ("list", "root-cause node (the verdict's)", [f"{jobs}?root_cause_node={name}" for _, name, _ in offenders]),
        ("list", "reviewed (the verdict's source)", [f"{jobs}?verdict_source=review"]),
        ("list", "user", [f"{jobs}?user=user{n:03d}" for n in (1, 7, 42, 150)]),
        ("list", "time range (last 7 days)", [f"{jobs}?ended_after={week}"]),
        ("list", "text: common model name", [f"{jobs}?q=llama3-70b", f"{jobs}?q=mixtral-8b"]),
        ("list", "text: one job id", [f"{jobs}?q={job}" for job in job_ids]),
        (
            "list",
            "all filters together",
            [
                f"{jobs}?cluster=dgx-a&outcome=attributed&domain=hardware&subdomain=gpu.bus"
                f"&user=user001&ended_after={week}"
            ],
        ),  # fmt: skip
        ("list", "sorted by user", [f"{jobs}?sort=user", f"{jobs}?sort=-user"]),
        ("list", f"a page after {half:,} rows", [f"{jobs}?after={cursor_value}"]),
        ("list", "triage queue", ["/triage/"]),
        ("attempt", f"attempt page, {LARGE_NODES} nodes", [f"/attempts/{pk}/" for pk in seeded["large"]]),
        ("node", "node page", [f"/nodes/{cluster}/{name}/" for cluster, name, _ in offenders]),
        ("patterns", "patterns page", ["/patterns/"]),
        ("patterns", "patterns by last seen, known ones", ["/patterns/?order=recent", "/patterns/?status=known"]),
        ("patterns", "a pattern's page", [f"/patterns/{key}/" for key in patterns]),
        ("other", "overview (30 days)", ["/"]),
        ("other", "/metrics (a Prometheus scrape)", ["/metrics"]),
    ]


def measure(base: str, session, urls: list[str], requests: int, reference: str) -> tuple[list[float], list[float]]:
    """Times of ``requests`` requests of ``urls`` (in turn), each right after one of ``reference``: the two lists."""
    for url in urls[:3]:
        session.get(base + url).raise_for_status()  # warm up
    times, references = [], []
    for n in range(requests):
        for url, into in ((reference, references), (urls[n % len(urls)], times)):
            began = time.perf_counter()
            response = session.get(base + url)
            into.append((time.perf_counter() - began) * 1000)
            response.raise_for_status()
    return times, references


def load_average() -> str:
    return " ".join(f"{value:.2f}" for value in os.getloadavg())


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--attempts", type=int, default=1_000_000)
    parser.add_argument("--requests", type=int, default=60, help="timed requests per scenario")
    parser.add_argument("--database-url", default="postgres://postgres@127.0.0.1:5432/faultline_pages_bench")
    parser.add_argument("--keep", action="store_true", help="keep the database (drop it yourself)")
    parser.add_argument("--reuse", action="store_true", help="measure the database seeded by an earlier --keep run")
    args = parser.parse_args()

    import psycopg
    import requests

    database = args.database_url.rsplit("/", 1)[1]
    admin_url = args.database_url.rsplit("/", 1)[0] + "/postgres"
    workdir = Path(tempfile.mkdtemp(prefix="faultline-pages-bench-"))
    env = {
        **os.environ,
        "DATABASE_URL": args.database_url,
        "DJANGO_DEBUG": "0",
        "DJANGO_SECURE_COOKIES": "0",  # plain HTTP on loopback: the session and CSRF cookies without Secure
        "FAULTLINE_BUNDLE_ROOT": str(workdir / "bundles"),
        "FAULTLINE_VAR_DIR": str(workdir / "var"),
        "FAULTLINE_LOG_LEVEL": "WARNING",
        "CELERY_BROKER_URL": "",
        "FAULTLINE_METRICS_NETWORKS": "127.0.0.1/32",  # the scrape scenario, from this machine
        "FAULTLINE_METRICS_CACHE_SECONDS": "0",
    }
    manage = [sys.executable, str(BASE_DIR / "manage.py")]
    server = None
    try:
        if not args.reuse:
            with psycopg.connect(admin_url, autocommit=True) as admin:
                admin.execute(f"DROP DATABASE IF EXISTS {database} WITH (FORCE)")
                admin.execute(f"CREATE DATABASE {database}")
            subprocess.run([*manage, "migrate", "-v0"], check=True, cwd=BASE_DIR, env=env)
            began = time.perf_counter()
            print(f"seeding {args.attempts:,} attempts by COPY ...", flush=True)
            with psycopg.connect(args.database_url) as connection:
                seeded = seed(connection, args.attempts)
            began_rollup = time.perf_counter()  # the seed wrote the attempts by COPY, not through the services
            subprocess.run([*manage, "verdict_days"], check=True, cwd=BASE_DIR, env=env)
            print(f"daily rollups built from the attempts in {time.perf_counter() - began_rollup:.1f} s", flush=True)
            with psycopg.connect(args.database_url, autocommit=True) as connection:
                connection.execute("VACUUM ANALYZE")
            print(f"seeded and analysed in {time.perf_counter() - began:.0f} s", flush=True)
        else:  # a database kept by an earlier run: the migrations added since (0009 builds the daily rollups)
            subprocess.run([*manage, "migrate", "-v0"], check=True, cwd=BASE_DIR, env=env)
        with psycopg.connect(args.database_url, autocommit=True) as connection:
            for table in ("diagnoses_verdictday", "diagnoses_verdictnodeday"):  # as autovacuum keeps them
                connection.execute(f"VACUUM ANALYZE {table}")
        with psycopg.connect(args.database_url, autocommit=True) as connection:
            connection.execute("ANALYZE")  # statistics for indexes made after the seed (a --reuse run)
        with psycopg.connect(args.database_url) as connection:
            if args.reuse:
                rows = connection.execute(
                    "SELECT attempt_id FROM diagnoses_attempt_nodes GROUP BY 1 HAVING count(*) > 100"
                )
                seeded = {"large": [row[0] for row in rows]}
            size = connection.execute("SELECT pg_size_pretty(pg_database_size(current_database()))").fetchone()[0]
            print(f"database size {size}")
            plan = scenarios(connection, seeded)
        password = "bench password 1"
        subprocess.run(
            [*manage, "shell", "-v0", "-c",
             "from django.contrib.auth.models import User, Group; u, _ = User.objects.get_or_create(username='bench');"
             f"u.set_password('{password}'); u.save(); u.groups.add(Group.objects.get(name='triager'))"],
            check=True, cwd=BASE_DIR, env=env,
        )  # fmt: skip
        port = free_port()
        server = subprocess.Popen(
            [sys.executable, "-m", "gunicorn", "triage.wsgi:application", "--bind", f"127.0.0.1:{port}",
             "--workers", "1", "--log-level", "warning"],
            cwd=BASE_DIR, env=env,
        )  # fmt: skip
        base = f"http://127.0.0.1:{port}"
        session = requests.Session()
        for _ in range(100):
            try:
                session.get(f"{base}/accounts/login/", timeout=10)
                break
            except (requests.ConnectionError, requests.Timeout):  # not serving yet (a loaded machine starts slowly)
                time.sleep(0.1)
        login = session.get(f"{base}/accounts/login/")
        session.post(
            f"{base}/accounts/login/",
            data={"username": "bench", "password": password, "csrfmiddlewaretoken": session.cookies["csrftoken"]},
            headers={"Referer": login.url},
        ).raise_for_status()
        print(f"load average at the start: {load_average()}")
        # each request of a page follows one of the unfiltered job list (the reference), so that the ratio of their
        # medians holds on a machine whose load changes during the run
        print("\n| page | p50 (ms) | p95 (ms) | the reference's p50 (ms) | p50 / the reference's |")
        print("|---|---|---|---|---|")
        reference = plan[0][2][0]
        for group, name, urls in plan:
            times, references = measure(base, session, urls, args.requests, reference)
            # issue 13: every page 150 ms (the overview and the /metrics scrape included), a 1,024-node attempt 300
            target = {"attempt": 300}.get(group, 150)
            p50, p95, yardstick = statistics.median(times), percentile(times, 0.95), statistics.median(references)
            verdict = f" ✓ (target {target})" if p95 <= target else f" ✗ (target {target})"
            print(f"| {name} | {p50:.1f} | {p95:.1f}{verdict} | {yardstick:.1f} | {p50 / yardstick:.2f} |", flush=True)
        print(f"\nload average at the end: {load_average()}")
    finally:
        if server is not None:
            server.terminate()
            server.wait()
        if not args.keep:
            with psycopg.connect(admin_url, autocommit=True) as admin:
                admin.execute(f"DROP DATABASE IF EXISTS {database} WITH (FORCE)")
        subprocess.run(["rm", "-rf", str(workdir)], check=False)


if __name__ == "__main__":
    main()
