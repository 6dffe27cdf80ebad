"""One node's system log as its collector writes it: syslog, RHEL messages, the journal or dmesg.

Lines are recorded with their true moment and rendered at the end, in time order, in the form of
the site: classic syslog with a host field (local time, no year), ``journalctl -o short-iso``,
``dmesg -T``, ``dmesg -H`` or raw kernel uptime. A raw dmesg keeps the boot messages, among them the
RTC line that ties uptime to the wall clock. ``dmesg -H`` (util-linux sys-utils/dmesg.c, print_record,
DMESG_TIMEFTM_RELTIME) prints the local minute when it changes and otherwise only the time since the
previous line, so most of its lines carry no time of their own. dmesg holds only kernel messages; the
other forms hold daemons too.
"""

from __future__ import annotations

from datetime import datetime, timedelta, tzinfo

from demo import timestamps

FORMS = ("syslog", "messages", "journal", "dmesg", "dmesg-T", "dmesg-H")


class SystemLog:
    def __init__(self, node: str, form: str, zone: tzinfo, boot: datetime, kernel: str, driver: str, nic: str):
        if form not in FORMS:
            raise ValueError(f"unknown system log form {form!r}")
        self.node = node
        self.form = form
        self.zone = zone
        self.boot = boot
        self.kernel_release = kernel
        self.driver = driver
        self.nic = nic  # the first NIC's PCI address, for its firmware line at boot
        self.entries: list[tuple[datetime, int, str | None, str]] = []  # (moment, order, ident or None, text)
        self.until: datetime | None = None

    @property
    def kernel_only(self) -> bool:
        return self.form in ("dmesg", "dmesg-T", "dmesg-H")

    def kernel(self, moment: datetime, text: str) -> None:
        self.entries.append((moment, len(self.entries), None, text))

    def daemon(self, moment: datetime, ident: str, text: str) -> None:
        """A daemon's line; ``ident`` is ``name[pid]`` as syslog prints it."""
        if not self.kernel_only:
            self.entries.append((moment, len(self.entries), ident, text))

    def stop(self, moment: datetime) -> None:
        """The node died at ``moment``: nothing after it reaches the log."""
        self.until = moment

    def render(self) -> bytes:
        entries = sorted(e for e in self.entries if self.until is None or e[0] <= self.until)
        if self.form == "dmesg-H":
            lines = self._relative_lines([(moment, text) for moment, _, _, text in entries])
        else:
            lines = self._boot_lines() if self.form == "dmesg" else []
            lines.extend(self._line(moment, ident, text) for moment, _, ident, text in entries)
        return ("\n".join(lines) + "\n").encode()

    def _relative_lines(self, entries: list[tuple[datetime, str]]) -> list[str]:
        """``dmesg -H``: the local minute on the first line of each minute, the delta to the previous line
        on the others."""
        lines, previous, minute = [], None, None
        for moment, text in entries:
            local = moment.astimezone(self.zone)
            now = (local.timetuple().tm_yday, local.hour, local.minute)
            if now != minute:
                stamp = timestamps.dmesg_minute(moment, self.zone)
            else:
                stamp = timestamps.dmesg_relative((moment - previous).total_seconds())
            lines.append(f"{stamp} {text}")
            previous, minute = moment, now
        return lines

    def _line(self, moment: datetime, ident: str | None, text: str) -> str:
        since_boot = (moment - self.boot).total_seconds()
        if self.form == "dmesg":
            return f"{timestamps.uptime(since_boot)} {text}"
        if self.form == "dmesg-T":
            return f"{timestamps.dmesg_t(moment, self.zone)} {text}"
        if self.form == "journal":
            return f"{timestamps.journal(moment, self.zone)} {self.node} {ident or 'kernel'}: {text}"
        stamp = timestamps.syslog(moment, self.zone)
        if ident is not None:
            return f"{stamp} {self.node} {ident}: {text}"
        if self.form == "syslog":  # Ubuntu's rsyslog keeps the kernel's own uptime stamp
            return f"{stamp} {self.node} kernel: {timestamps.uptime(since_boot)} {text}"
        return f"{stamp} {self.node} kernel: {text}"

    def _boot_lines(self) -> list[str]:
        """The start of the ring buffer: the kernel banner and the RTC read that anchors uptime."""
        rtc = self.boot + timedelta(seconds=1.919869)
        wall = rtc.replace(microsecond=0)
        rtc_uptime = (rtc - self.boot).total_seconds() - (rtc - wall).total_seconds()
        release = self.kernel_release
        boot = [
            (
                0.0,
                f"Linux version {release} (buildd@lcy02-amd64-051) (x86_64-linux-gnu-gcc-12 "
                "(Ubuntu 12.3.0-1ubuntu1~22.04) 12.3.0, GNU ld (GNU Binutils for Ubuntu) 2.38) "
                "#21~22.04.1-Ubuntu SMP PREEMPT_DYNAMIC",
            ),
            (
                0.0,
                f"Command line: BOOT_IMAGE=/boot/vmlinuz-{release} root=UUID=4c1c5f0e-2b1a-4f7e-9d7e-0c5b1f3a9e21 ro "
                "quiet splash iommu=pt pci=realloc=off",
            ),
            (0.0, "KERNEL supported cpus:"),
            (0.0, "  Intel GenuineIntel"),
            (0.0, "  AMD AuthenticAMD"),
            (0.000001, "tsc: Detected 2100.000 MHz processor"),
            (0.712733, "Freeing unused kernel image (initmem) memory: 4364K"),
            (
                rtc_uptime,
                f"rtc_cmos 00:02: setting system clock to {wall:%Y-%m-%dT%H:%M:%S} UTC ({int(wall.timestamp())})",
            ),
            (2.604511, "systemd[1]: Detected architecture x86-64."),
            (5.101274, f"mlx5_core {self.nic}: firmware version: 28.42.1000"),
            (6.302117, "nvidia: loading out-of-tree module taints kernel."),
            (6.401892, "nvidia-nvlink: Nvlink Core is being initialized, major device number 234"),
            (6.603311, f"NVRM: loading NVIDIA UNIX x86_64 Kernel Module  {self.driver}  Tue Feb 18 20:46:06 UTC 2025"),
            (7.299840, "nvidia-uvm: Loaded the UVM driver, major device number 509."),
        ]
        return [f"{timestamps.uptime(at)} {text}" for at, text in boot]
