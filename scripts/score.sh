#!/usr/bin/env bash
# Score the engine (manage.py diagnose) on the shared scenario sets and fail below their floors:
# dev (synthetic bundles) at least 0.95, real-dev (whole real logs from public reports) at least 0.85,
# and no false attribution or error on either. Results go to var/score-<set>.txt.
set -euo pipefail
cd "$(dirname "$0")/.."
SCENARIOS=${FAULTLINE_SCENARIOS:-../shared/scenarios}
PYTHON=${PYTHON:-.venv/bin/python}
mkdir -p var
status=0
for entry in dev:0.95 real-dev:0.85; do
  set_name=${entry%%:*} floor=${entry##*:}
  if [ ! -d "$SCENARIOS/$set_name" ]; then
    echo "score: $SCENARIOS/$set_name not found; skipped"
    continue
  fi
  python3 "$SCENARIOS/../tools/score.py" "$SCENARIOS/$set_name" -- "$PYTHON" manage.py diagnose > "var/score-$set_name.txt"
  grep '^FAIL' "var/score-$set_name.txt" || true
  line=$(tail -n 1 "var/score-$set_name.txt")
  echo "$set_name: $line (floor $floor)"
  python3 - "$line" "$floor" <<'PY' || status=1
import re, sys
line, floor = sys.argv[1], float(sys.argv[2])
fields = dict(re.findall(r"(\w+)=([\d.]+)", line))
if float(fields["accuracy"]) < floor or int(fields["false_attributions"]) > 0 or int(fields["errors"]) > 0:
    sys.exit(f"  below the bar (accuracy >= {floor}, no false attributions, no errors)")
PY
done
exit $status
