"""Write the DCGM and InfiniBand samples that scripts/prometheus.sh backfills, as OpenMetrics.

Fixed times, so that the tests can name them: every 15 s from 2025-06-01T10:00:00Z to 12:00:00Z, on
node01, node02 and node03 with four GPUs each.

- DCGM_FI_DEV_XID_ERRORS: 0, except node02 GPU 3, which takes Xid 79 at 11:00.
- DCGM_FI_DEV_ECC_DBE_VOL_TOTAL: 0, except node01 GPU 1, which counts 2 double-bit errors at 11:10.
- DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL: a slow climb on every GPU.
- DCGM_FI_DEV_GPU_TEMP: 40 to 60 C.
- node_infiniband_link_downed_total (node_exporter, node in ``instance``): node03's mlx5_0 port 1
  goes down once at 11:20.
"""

import sys
from datetime import UTC, datetime

START = int(datetime(2025, 6, 1, 10, 0, tzinfo=UTC).timestamp())
END = int(datetime(2025, 6, 1, 12, 0, tzinfo=UTC).timestamp())
STEP = 15
NODES = ("node01", "node02", "node03")
GPUS = range(4)
VERSION = "1"  # bump when the samples change: scripts/prometheus.sh then backfills again


def at(hour: int, minute: int) -> int:
    return int(datetime(2025, 6, 1, hour, minute, tzinfo=UTC).timestamp())


def gpu_series(out, name: str, kind: str, help_text: str, value) -> None:
    out.write(f"# HELP {name} {help_text}\n# TYPE {name} {kind}\n")
    for node in NODES:
        for gpu in GPUS:
            labels = f'Hostname="{node}",gpu="{gpu}",UUID="GPU-{node}-{gpu}"'
            for index, stamp in enumerate(range(START, END + 1, STEP)):
                out.write(f"{name}{{{labels}}} {value(node, gpu, index, stamp)} {stamp}\n")


def main(path: str) -> None:
    with open(path, "w") as out:
        gpu_series(
            out,
            "DCGM_FI_DEV_XID_ERRORS",
            "gauge",
            "Value of the last XID error encountered.",
            lambda node, gpu, i, t: 79 if (node, gpu) == ("node02", 3) and t >= at(11, 0) else 0,
        )
        gpu_series(
            out,
            "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL",
            "gauge",
            "Total number of double-bit volatile ECC errors.",
            lambda node, gpu, i, t: 2 if (node, gpu) == ("node01", 1) and t >= at(11, 10) else 0,
        )
        gpu_series(
            out,
            "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL",
            "gauge",
            "Total number of NVLink flow-control CRC errors.",
            lambda node, gpu, i, t: i // 40,
        )
        gpu_series(
            out, "DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (in C).", lambda node, gpu, i, t: 40 + gpu + i % 20
        )
        family = "node_infiniband_link_downed"  # an OpenMetrics counter: its samples end in _total
        out.write(f"# HELP {family} Number of times the link failed to recover from an error state and went down\n")
        out.write(f"# TYPE {family} counter\n")
        for node in NODES:
            labels = f'instance="{node}:9100",job="node",device="mlx5_0",port="1"'
            for stamp in range(START, END + 1, STEP):
                value = 1 if node == "node03" and stamp >= at(11, 20) else 0
                out.write(f"{family}_total{{{labels}}} {value} {stamp}\n")
        out.write("# EOF\n")


if __name__ == "__main__":
    main(sys.argv[1])
