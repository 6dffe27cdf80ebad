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
  # real-dev labels some causes that only the thread established (log_supports_label "no"): report the
  # accuracy on the cases whose own log shows the cause beside the whole set's.
  python3 - "$SCENARIOS/$set_name" "var/score-$set_name.txt" <<'PY'
import json, pathlib, re, sys
root, report = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2]).read_text()
failed = set(re.findall(r"^FAIL (\S+)", report, re.M))
shown = [p.parent.name for p in sorted(root.glob("*/expected.json"))
         if json.loads(p.read_text()).get("log_supports_label", "yes") != "no"]
if len(shown) < len(list(root.glob("*/expected.json"))):
    correct = sum(1 for name in shown if name not in failed)
    print(f"  where the log shows the cause: {correct}/{len(shown)} = {correct / len(shown):.3f}")
PY
done
exit $status
