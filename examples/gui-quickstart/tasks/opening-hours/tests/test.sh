#!/usr/bin/env bash
# Passes when a browser reached the opening-hours page (the site server's log, out of the agent's
# reach) and the final answer gives Saturday's opening time.
python3 - "$FORGE_SITE_LOG" "$FORGE_HARNESS_STDOUT" > "$FORGE_LOGS/reward.txt" <<'PY'
import json, sys
requests = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
reached = any(r["method"] == "GET" and r["path"] == "/hours.html" and "Chrome" in r["user_agent"] for r in requests)
answer = open(sys.argv[2]).read()
print(f"hours page reached: {reached}; answer names 10:30: {'10:30' in answer}", file=sys.stderr)
print(1 if reached and "10:30" in answer else 0)
PY
