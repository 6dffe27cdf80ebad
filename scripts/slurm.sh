#!/usr/bin/env bash
# A single-node Slurm 22.05 cluster with slurmdbd accounting, for the Slurm connector's tests.
# Idempotent: installs Debian's packages when missing, writes the configuration, and starts munged,
# slurmdbd (on the MariaDB server at 127.0.0.1:3306, started when it is not running), slurmctld and
# slurmd unless they already run. Needs root (no systemd); without it, it says so and does nothing,
# and the tests marked `slurm` skip.
set -euo pipefail

if [ "$(id -u)" != 0 ]; then
  echo "slurm: not root; not starting Slurm (the slurm-marked tests will skip)"
  exit 0
fi

NODE=$(hostname -s)
CLUSTER=faultline
CONF=/etc/slurm/slurm.conf
DBD_CONF=/etc/slurm/slurmdbd.conf
export JOB_OUTPUT=/var/spool/slurm-jobout

apt_install() {
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "$@" >/dev/null \
    || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "$@" >/dev/null; }
}
missing=()
for package in slurm-wlm slurmctld slurmd slurmdbd slurm-client munge; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q 'install ok installed' || missing+=("$package")
done
command -v mariadb >/dev/null || missing+=(mariadb-server)
if [ ${#missing[@]} -gt 0 ]; then
  echo "slurm: installing ${missing[*]}"
  apt_install "${missing[@]}"
fi

running() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }
wait_for() {  # wait_for SECONDS COMMAND...: poll until COMMAND succeeds
  local limit=$1; shift
  for _ in $(seq 1 $((limit * 4))); do "$@" >/dev/null 2>&1 && return 0; sleep 0.25; done
  "$@"
}
port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

mkdir -p /etc/slurm /var/spool/slurmctld /var/spool/slurmd /var/log/slurm /run/munge /run/slurm "$JOB_OUTPUT"
chown slurm:slurm /var/spool/slurmctld /var/log/slurm /run/slurm
chown munge:munge /run/munge
chmod 0755 /run/munge
chmod 1777 "$JOB_OUTPUT"
if [ ! -s /etc/munge/munge.key ]; then
  /usr/sbin/mungekey --create --force
  chown munge:munge /etc/munge/munge.key
  chmod 0400 /etc/munge/munge.key
fi

# Write a file only when its content changes; return 0 when it did.
write_if_changed() {
  local path=$1 content
  content=$(cat)
  if [ -f "$path" ] && [ "$(cat "$path")" = "$content" ]; then return 1; fi
  printf '%s\n' "$content" > "$path"
}

changed=0
write_if_changed "$CONF" <<CONF && changed=1
# Written by faultline scripts/slurm.sh
ClusterName=${CLUSTER}
SlurmctldHost=${NODE}(127.0.0.1)
SlurmUser=slurm
AuthType=auth/munge
CredType=cred/munge
StateSaveLocation=/var/spool/slurmctld
SlurmdSpoolDir=/var/spool/slurmd
SlurmctldPidFile=/run/slurm/slurmctld.pid
SlurmdPidFile=/run/slurmd.pid
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
SlurmctldPort=6817
SlurmdPort=6818
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/linux
JobAcctGatherFrequency=30
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmdParameters=config_overrides
ReturnToService=1
MinJobAge=3600
InactiveLimit=0
KillWait=5
Waittime=0
SlurmctldTimeout=30
SlurmdTimeout=60
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=127.0.0.1
AccountingStoragePort=6819
NodeName=${NODE} NodeAddr=127.0.0.1 CPUs=4 RealMemory=4000 State=UNKNOWN
PartitionName=debug Nodes=${NODE} Default=YES MaxTime=INFINITE State=UP
CONF

write_if_changed "$DBD_CONF" <<CONF && changed=1
# Written by faultline scripts/slurm.sh
AuthType=auth/munge
DbdHost=localhost
DbdAddr=127.0.0.1
DbdPort=6819
SlurmUser=slurm
LogFile=/var/log/slurm/slurmdbd.log
PidFile=/run/slurm/slurmdbd.pid
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=3306
StorageUser=slurm
StoragePass=slurmpw
StorageLoc=slurm_acct_db
CONF
chown slurm:slurm "$DBD_CONF"
chmod 0600 "$DBD_CONF"

if ! pgrep -x munged >/dev/null; then
  runuser -u munge -- /usr/sbin/munged
fi

if ! port_open 3306; then
  echo "slurm: starting MariaDB"
  mkdir -p /run/mysqld && chown mysql:root /run/mysqld
  start-stop-daemon --start --oknodo --background --exec /usr/sbin/mariadbd -- --user=mysql --bind-address=127.0.0.1
  wait_for 30 mariadb-admin ping
fi
mariadb -h 127.0.0.1 -u root -e "CREATE DATABASE IF NOT EXISTS slurm_acct_db;
CREATE USER IF NOT EXISTS 'slurm'@'localhost' IDENTIFIED BY 'slurmpw';
CREATE USER IF NOT EXISTS 'slurm'@'127.0.0.1' IDENTIFIED BY 'slurmpw';
GRANT ALL ON slurm_acct_db.* TO 'slurm'@'localhost';
GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';"

restart() {  # restart PIDFILE COMMAND: stop the daemon of PIDFILE (when running), then start COMMAND
  local pidfile=$1; shift
  if running "$pidfile"; then
    local pid
    pid=$(cat "$pidfile")
    kill "$pid"
    for _ in $(seq 1 40); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
  fi
  "$@"
}

if [ $changed = 1 ] || ! running /run/slurm/slurmdbd.pid; then
  restart /run/slurm/slurmdbd.pid /usr/sbin/slurmdbd
  wait_for 30 port_open 6819
fi
sacctmgr -i -n list cluster format=cluster | grep -qw "$CLUSTER" || sacctmgr -i add cluster "$CLUSTER" >/dev/null
if [ $changed = 1 ] || ! running /run/slurm/slurmctld.pid; then
  restart /run/slurm/slurmctld.pid /usr/sbin/slurmctld
  wait_for 30 scontrol ping
fi
if [ $changed = 1 ] || ! running /run/slurmd.pid; then
  restart /run/slurmd.pid /usr/sbin/slurmd
fi

# A test that was interrupted may have left the node down; bring it back.
state() { sinfo -h -n "$NODE" -o '%T' 2>/dev/null | head -n 1; }
case "$(state)" in
  down* | drain* | fail*) scontrol update nodename="$NODE" state=resume ;;
esac
node_ready() { state | grep -qE '^(idle|mixed|allocated)'; }
if ! wait_for 60 node_ready; then
  echo "slurm: node $NODE did not become idle: $(state)" >&2
  exit 1
fi
echo "slurm: cluster $CLUSTER with node $NODE is up (sacct via slurmdbd on 127.0.0.1:6819)"
