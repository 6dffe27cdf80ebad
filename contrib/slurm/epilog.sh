#!/usr/bin/env bash
# Faultline's Slurm hook: posts each failed job to Faultline for immediate analysis.
#
# Install on the controller as EpilogSlurmctld (it runs once per job, as SlurmUser):
#   slurm.conf:  EpilogSlurmctld=/etc/slurm/faultline-epilog.sh
# Configure in /etc/default/faultline-epilog (sourced when present) or the environment:
#   FAULTLINE_URL         Faultline's base URL, e.g. https://faultline.example.org
#   FAULTLINE_TOKEN_FILE  a file holding the API token (sent as "Authorization: Token <token>")
#   FAULTLINE_CLUSTER     the cluster's name in Faultline (default: Slurm's ClusterName)
#   FAULTLINE_MAX_OUTPUT  bytes kept from the end of each job output file (default 52428800)
#
# It builds an attempt bundle (docs/connectors.md; docs/bundles.md) from the job's
# `scontrol show job` record and output files: attempt.json, logs/stdout.out, logs/stderr.err,
# packs it as a .tar.gz and POSTs it to $FAULTLINE_URL/api/v1/attempts as the multipart field
# "bundle". Jobs that COMPLETED are not posted. As a hook it always exits 0 (a failing epilog must
# not disturb Slurm); problems go to stderr, which slurmctld logs.
#
#   epilog.sh                         hook mode: the job is $SLURM_JOB_ID
#   epilog.sh --bundle OUT.tar.gz ID  build the bundle of job ID into OUT.tar.gz, post nothing
set -uo pipefail

[ -r /etc/default/faultline-epilog ] && . /etc/default/faultline-epilog
MAX_OUTPUT=${FAULTLINE_MAX_OUTPUT:-52428800}

fail() { echo "faultline-epilog: $*" >&2; exit "${EXIT_ON_ERROR:-0}"; }

json_string() {  # a JSON string literal of $1
  local s=$1
  s=${s//\\/\\\\}; s=${s//\"/\\\"}; s=${s//$'\t'/\\t}; s=${s//$'\r'/\\r}; s=${s//$'\n'/\\n}
  printf '"%s"' "$s"
}

field() {  # field NAME: the value of NAME= in the scontrol record (up to the next " Key=")
  sed -n "s/^.* $1=\(.*\)\$/\1/p; s/^$1=\(.*\)\$/\1/p" <<<"$RECORD" | head -n 1 | sed 's/ [A-Za-z][A-Za-z0-9_:\/]*=.*$//'
}

utc() {  # a Slurm time printed under TZ=UTC as RFC 3339
  case $1 in ''|Unknown|None|N/A) printf '' ;; *) printf '%sZ' "$1" ;; esac
}

build_bundle() {  # build_bundle JOB_ID OUT.tar.gz
  local job=$1 out=$2 dir
  RECORD=$(TZ=UTC scontrol -o show job "$job" 2>&1) || fail "scontrol show job $job: $RECORD"
  STATE=$(field JobState)
  [ -n "$STATE" ] || fail "job $job: no JobState in: ${RECORD:0:200}"
  local cluster=${FAULTLINE_CLUSTER:-$(scontrol show config | sed -n 's/^ClusterName *= *//p')}
  local nodelist start end
  nodelist=$(field NodeList)
  start=$(utc "$(field StartTime)")
  end=$(utc "$(field EndTime)")
  [ -n "$start" ] && [ -n "$end" ] && [ -n "$nodelist" ] && [ "$nodelist" != "(null)" ] || fail "job $job never ran; nothing to post"
  local nodes="" node
  for node in $(scontrol show hostnames "$nodelist"); do nodes+="${nodes:+, }$(json_string "$node")"; done
  local user reason
  user=$(field UserId); user=${user%%(*}
  reason=$(field Reason); [ "$reason" = None ] && reason=""
  dir=$(mktemp -d) || fail "cannot make a temporary directory"
  mkdir -p "$dir/logs"
  cat > "$dir/attempt.json" <<JSON
{
  "cluster": $(json_string "$cluster"),
  "scheduler": "slurm",
  "job_id": $(json_string "$job"),
  "attempt": $(field Restarts),
  "name": $(json_string "$(field JobName)"),
  "user": $(json_string "$user"),
  "nodes": [$nodes],
  "start": $(json_string "$start"),
  "end": $(json_string "$end"),
  "state": $(json_string "$STATE"),
  "exit_code": $(json_string "$(field ExitCode)"),
  "reason": $(json_string "$reason")
}
JSON
  local stdout stderr
  stdout=$(field StdOut); stderr=$(field StdErr)
  [ -r "$stdout" ] && tail -c "$MAX_OUTPUT" "$stdout" > "$dir/logs/stdout.out"
  [ "$stderr" != "$stdout" ] && [ -r "$stderr" ] && tail -c "$MAX_OUTPUT" "$stderr" > "$dir/logs/stderr.err"
  tar -C "$dir" -czf "$out" attempt.json logs || { rm -rf "$dir"; fail "cannot write $out"; }
  rm -rf "$dir"
}

if [ "${1:-}" = --bundle ]; then
  [ $# = 3 ] || { echo "usage: $0 --bundle OUT.tar.gz JOB_ID" >&2; exit 2; }
  EXIT_ON_ERROR=1 build_bundle "$3" "$2"
  exit 0
fi

job=${SLURM_JOB_ID:-}
[ -n "$job" ] || fail "SLURM_JOB_ID is not set (run as EpilogSlurmctld, or use --bundle)"
[ -n "${FAULTLINE_URL:-}" ] || fail "FAULTLINE_URL is not set"
[ -r "${FAULTLINE_TOKEN_FILE:-}" ] || fail "FAULTLINE_TOKEN_FILE does not name a readable file"
bundle=$(mktemp --suffix=.tar.gz) || fail "cannot make a temporary file"
trap 'rm -f "$bundle"' EXIT
build_bundle "$job" "$bundle"
[ "$STATE" = COMPLETED ] && exit 0
token=$(tr -d '[:space:]' < "$FAULTLINE_TOKEN_FILE")
answer=$(curl -sS --max-time 60 --retry 3 --retry-delay 5 -o /dev/null -w '%{http_code}' \
  -H "Authorization: Token $token" -F "bundle=@$bundle;type=application/gzip" \
  "${FAULTLINE_URL%/}/api/v1/attempts" 2>&1)
case $answer in
  2??) ;;
  *) fail "posting job $job to ${FAULTLINE_URL%/}/api/v1/attempts failed: $answer" ;;
esac
exit 0
