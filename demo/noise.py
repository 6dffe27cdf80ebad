"""The background of a node's system log: what a healthy GPU node prints while a job runs on it.

cron and its sysstat collector, chronyd, systemd timers, ssh logins, correctable memory errors on
the odd DIMM, the kernel's perf and AppArmor chatter, slurmd launching the job's tasks, and on
Kubernetes nodes the CNI bridge ports of each new pod. None of it is a cause; the engine must look past it.
"""

from __future__ import annotations

import random
from datetime import datetime, timedelta

from demo.systemlog import SystemLog

APPARMOR = (
    'apparmor="DENIED" operation="open" class="file" profile="snap.lxd.activate" name="/proc/{pid}/mountinfo" '
    'pid={pid} comm="snap-exec" requested_mask="r" denied_mask="r" fsuid=0 ouid=0'
)
TIMERS = (
    ("apt-daily.service", "Daily apt download activities"),
    ("logrotate.service", "Rotate log files"),
    ("systemd-tmpfiles-clean.service", "Cleanup of Temporary Directories"),
    ("motd-news.service", "Message of the Day"),
    ("man-db.service", "Daily man-db regeneration"),
)


def minutes(begin: datetime, end: datetime, every: int, at: int):
    """The whole minutes in [begin, end] whose minute-of-hour is ``at`` modulo ``every``."""
    moment = begin.replace(second=0, microsecond=0) + timedelta(minutes=1)
    while moment <= end:
        if moment.minute % every == at:
            yield moment
        moment += timedelta(minutes=1)


def system_background(log: SystemLog, rng: random.Random, begin: datetime, end: datetime, *, bad_dimm: bool) -> None:
    """Fill ``log`` with a healthy node's background between ``begin`` and ``end``."""
    rhel = log.form == "messages"
    for moment in minutes(begin, end, 10, 5):
        at = moment + timedelta(seconds=rng.uniform(0.5, 1.5))
        pid = rng.randrange(10_000, 999_999)
        if rhel:
            log.daemon(at, f"CROND[{pid}]", "(root) CMD (/usr/lib64/sa/sa1 1 1)")
            continue
        cron = f"CRON[{pid}]"
        log.daemon(at, cron, "pam_unix(cron:session): session opened for user root(uid=0) by (uid=0)")
        log.daemon(at, cron, "(root) CMD (command -v debian-sa1 > /dev/null && debian-sa1 1 1)")
        log.daemon(
            at + timedelta(seconds=rng.uniform(0.1, 0.9)), cron, "pam_unix(cron:session): session closed for user root"
        )
    for moment in minutes(begin, end, 60, 17):
        at = moment + timedelta(seconds=rng.uniform(0.5, 1.5))
        log.daemon(
            at, f"CRON[{rng.randrange(10_000, 999_999)}]", "(root) CMD (   cd / && run-parts --report /etc/cron.hourly)"
        )
    chronyd = f"chronyd[{rng.randrange(900, 2400)}]"
    moment = begin + timedelta(minutes=rng.uniform(0, 30))
    while moment < end:
        log.daemon(moment, chronyd, f"Selected source 10.{rng.randrange(0, 4)}.0.{rng.randrange(1, 5)}")
        moment += timedelta(minutes=rng.uniform(15, 70))
    moment = begin + timedelta(minutes=rng.uniform(0, 60))
    while moment < end:
        unit, description = rng.choice(TIMERS)
        log.daemon(moment, "systemd[1]", f"Starting {description}...")
        done = moment + timedelta(seconds=rng.uniform(0.2, 2.5))
        log.daemon(done, "systemd[1]", f"{unit}: Deactivated successfully.")
        log.daemon(done, "systemd[1]", f"Finished {description}.")
        moment += timedelta(minutes=rng.uniform(25, 95))
    _ssh_sessions(log, rng, begin, end)
    _kernel_chatter(log, rng, begin, end, bad_dimm)


def ssh_login(
    log: SystemLog,
    rng: random.Random,
    moment: datetime,
    user: str,
    uid: int,
    origin: str,
    *,
    number: int | None = None,
    logind: str | None = None,
) -> str:
    """sshd accepting a login from ``origin`` and logind starting its session ``number``; returns sshd's ident."""
    sshd = f"sshd[{rng.randrange(100_000, 999_999)}]"
    key = "".join(rng.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/") for _ in range(43))
    number = number or rng.randrange(1200, 9000)
    logind = logind or f"systemd-logind[{rng.randrange(1200, 2200)}]"
    port = rng.randrange(32768, 60999)
    log.daemon(moment, sshd, f"Accepted publickey for {user} from {origin} port {port} ssh2: ED25519 SHA256:{key}")
    log.daemon(moment, sshd, f"pam_unix(sshd:session): session opened for user {user}(uid={uid}) by (uid=0)")
    log.daemon(moment, logind, f"New session {number} of user {user}.")
    log.daemon(moment, "systemd[1]", f"Started session-{number}.scope - Session {number} of User {user}.")
    return sshd


def _ssh_sessions(log: SystemLog, rng: random.Random, begin: datetime, end: datetime) -> None:
    logind = f"systemd-logind[{rng.randrange(1200, 2200)}]"
    moment = begin + timedelta(minutes=rng.uniform(5, 50))
    session = rng.randrange(1200, 9000)
    while moment < end:
        user, uid = rng.choice((("svc-monitor", 990), ("root", 0), ("ops", 1002)))
        origin = f"10.0.{rng.randrange(0, 3)}.{rng.randrange(2, 250)}"
        sshd = ssh_login(log, rng, moment, user, uid, origin, number=session, logind=logind)
        closed = moment + timedelta(seconds=rng.uniform(3, 240))
        log.daemon(closed, sshd, f"pam_unix(sshd:session): session closed for user {user}")
        log.daemon(closed, logind, f"Session {session} logged out. Waiting for processes to exit.")
        session += rng.randrange(1, 40)
        moment += timedelta(minutes=rng.uniform(40, 160))


def _kernel_chatter(log: SystemLog, rng: random.Random, begin: datetime, end: datetime, bad_dimm: bool) -> None:
    """AppArmor denials, perf sampling adjustments and, on Kubernetes nodes, pods coming and going."""
    kubernetes = "gke" in log.kernel_release
    moment = begin + timedelta(minutes=rng.uniform(0, 20))
    while moment < end:
        roll = rng.random()
        if kubernetes and roll < 0.35:
            pod_network(log, rng, moment)
        elif roll < 0.7:
            pid = rng.randrange(20_000, 999_999)
            stamp = f"{moment.timestamp():.3f}"
            log.kernel(
                moment, f"audit: type=1400 audit({stamp}:{rng.randrange(100, 9999)}): {APPARMOR.format(pid=pid)}"
            )
        else:
            limit = rng.randrange(2500, 9000)
            log.kernel(
                moment,
                f"perf: interrupt took too long ({limit + rng.randrange(1, 600)} > {limit}), "
                f"lowering kernel.perf_event_max_sample_rate to {rng.randrange(20_000, 80_000)}",
            )
        moment += timedelta(minutes=rng.uniform(4, 30) if log.kernel_only else rng.uniform(15, 75))
    if not bad_dimm:
        return
    channel, dimm = rng.randrange(0, 8), rng.randrange(0, 2)
    moment = begin + timedelta(minutes=rng.uniform(0, 20))
    while moment < end:
        log.kernel(
            moment,
            f"EDAC MC{channel // 2}: 1 CE memory read error on CPU_SrcID#{channel // 4}_MC#{channel // 2}"
            f"_Chan#{channel % 2}_DIMM#{dimm} (channel:{channel % 2} slot:{dimm} "
            f"page:0x{rng.randrange(0x100000, 0xFFFFFF):x} offset:0x{rng.randrange(0, 64) * 64:x} grain:32 "
            f"syndrome:0x0 -  err_code:0000:009f socket:{channel // 4} "
            f"imc:{channel // 2 % 2} rank:0 bg:{rng.randrange(0, 4)} ba:{rng.randrange(0, 4)} "
            f"row:{rng.randrange(0x1000, 0x3FFFF):x} col:{rng.randrange(0, 1024) * 8:x})",
        )
        moment += timedelta(minutes=rng.uniform(8, 45))


def slurmd_launch(log: SystemLog, rng: random.Random, moment: datetime, job_id: str, uid: int, head: str, batch: bool):
    """slurmd starting the job's batch script (on the first node) and its step's tasks."""
    slurmd = f"slurmd[{rng.randrange(2800, 4200)}]"
    if batch:
        log.daemon(moment, slurmd, f"slurmd: Launching batch job {job_id} for UID {uid}")
    at = moment + timedelta(seconds=rng.uniform(1.5, 4.0))
    log.daemon(
        at,
        slurmd,
        f"slurmd: launch task StepId={job_id}.0 request from UID:{uid} GID:{uid} HOST:{head} "
        f"PORT:{rng.randrange(33000, 60000)}",
    )
    log.daemon(at, slurmd, f"slurmd: task/affinity: lllp_distribution: JobId={job_id} manual binding: none,one_thread")


def pod_network(log: SystemLog, rng: random.Random, moment: datetime) -> None:
    """The kernel side of a pod starting on a Kubernetes node: its veth joins the CNI bridge."""
    veth = "veth" + "".join(rng.choice("0123456789abcdef") for _ in range(8))
    port = rng.randrange(2, 12)
    log.kernel(moment, f"cni0: port {port}({veth}) entered blocking state")
    log.kernel(moment, f"cni0: port {port}({veth}) entered disabled state")
    log.kernel(moment, f"device {veth} entered promiscuous mode")
    log.kernel(
        moment + timedelta(milliseconds=rng.randrange(20, 90)),
        f"IPv6: ADDRCONF(NETDEV_CHANGE): {veth}: link becomes ready",
    )
    log.kernel(
        moment + timedelta(milliseconds=rng.randrange(100, 200)), f"cni0: port {port}({veth}) entered forwarding state"
    )
