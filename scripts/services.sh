#!/usr/bin/env bash
# Start the PostgreSQL and Redis servers the tests use, when they are not already running.
# Idempotent; on a machine without them it installs Debian's packages first.
set -euo pipefail

pg_up() { pg_isready -q -h 127.0.0.1 -p 5432 2>/dev/null; }
redis_up() { redis-cli -h 127.0.0.1 -p 6379 ping 2>/dev/null | grep -q PONG; }
apt_install() {
  command -v apt-get >/dev/null || { echo "services: cannot install $* (no apt-get)" >&2; exit 1; }
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "$@" >/dev/null \
    || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "$@" >/dev/null; }
}

if ! pg_up; then
  command -v pg_ctlcluster >/dev/null || apt_install postgresql
  version=$(ls /etc/postgresql | sort -V | tail -n 1)
  [ -d "/etc/postgresql/$version/main" ] || pg_createcluster "$version" main -- -A trust >/dev/null
  pg_ctlcluster --skip-systemctl-redirect "$version" main start
  for _ in $(seq 1 30); do pg_up && break; sleep 0.5; done
  pg_up || { echo "services: PostgreSQL did not start on 127.0.0.1:5432" >&2; exit 1; }
fi

if ! redis_up; then
  command -v redis-server >/dev/null || apt_install redis-server
  mkdir -p /var/lib/redis /var/log/redis
  redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no \
    --dir /var/lib/redis --logfile /var/log/redis/ci.log
  for _ in $(seq 1 30); do redis_up && break; sleep 0.2; done
  redis_up || { echo "services: Redis did not start on 127.0.0.1:6379" >&2; exit 1; }
fi
echo "services: PostgreSQL on 127.0.0.1:5432 and Redis on 127.0.0.1:6379 are up"
