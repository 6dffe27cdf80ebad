#!/usr/bin/env bash
# A Prometheus server with backfilled DCGM and InfiniBand samples, for the Prometheus connector's tests.
# Idempotent: installs Debian's prometheus when missing, backfills scripts/prometheus_samples.py's data
# with promtool (again only when the samples' version changed), and starts the server on a free local
# port unless it already runs. Its URL is written to $FAULTLINE_PROMETHEUS_DIR/url.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
DIR=${FAULTLINE_PROMETHEUS_DIR:-/var/tmp/faultline-prometheus}
PYTHON=${PYTHON:-python3}
mkdir -p "$DIR"

if ! command -v prometheus >/dev/null || ! command -v promtool >/dev/null; then
  [ "$(id -u)" = 0 ] || { echo "prometheus: not installed, and installing needs root" >&2; exit 1; }
  echo "prometheus: installing Debian's prometheus"
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends prometheus >/dev/null \
    || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends prometheus >/dev/null; }
fi

ready() { [ -s "$DIR/url" ] && curl -fsS --max-time 2 "$(cat "$DIR/url")/-/ready" >/dev/null 2>&1; }
running() { [ -s "$DIR/pid" ] && kill -0 "$(cat "$DIR/pid")" 2>/dev/null; }

version=$($PYTHON -c "import sys; sys.path.insert(0, '$HERE'); import prometheus_samples as s; print(s.VERSION)")
if [ "$(cat "$DIR/version" 2>/dev/null)" != "$version" ]; then
  if running; then kill "$(cat "$DIR/pid")"; sleep 1; fi
  rm -rf "$DIR/data" "$DIR/url" "$DIR/pid"
  $PYTHON "$HERE/prometheus_samples.py" "$DIR/samples.om"
  promtool tsdb create-blocks-from openmetrics "$DIR/samples.om" "$DIR/data" >/dev/null
  rm -f "$DIR/samples.om"
  echo "$version" > "$DIR/version"
fi

if running && ready; then
  echo "prometheus: up at $(cat "$DIR/url")"
  exit 0
fi
running && kill "$(cat "$DIR/pid")" && sleep 1

port=$($PYTHON -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
printf 'global:\n  scrape_interval: 1h\nscrape_configs: []\n' > "$DIR/prometheus.yml"
# The samples are from 2025: keep them far longer than Prometheus' default 15 days.
nohup prometheus --config.file="$DIR/prometheus.yml" --storage.tsdb.path="$DIR/data" \
  --storage.tsdb.retention.time=100y --web.listen-address="127.0.0.1:$port" > "$DIR/prometheus.log" 2>&1 &
echo $! > "$DIR/pid"
echo "http://127.0.0.1:$port" > "$DIR/url"
for _ in $(seq 1 60); do ready && break; sleep 0.25; done
ready || { echo "prometheus: did not become ready; see $DIR/prometheus.log" >&2; tail -5 "$DIR/prometheus.log" >&2; exit 1; }
echo "prometheus: up at $(cat "$DIR/url")"
