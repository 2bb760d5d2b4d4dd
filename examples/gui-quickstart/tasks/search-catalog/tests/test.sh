#!/usr/bin/env bash
# Passes when the catalogue received a search for "astrolabe" from the browser (the site server's
# log, out of the agent's reach).
python3 - "$FORGE_SITE_LOG" > "$FORGE_LOGS/reward.txt" <<'PY'
import json, sys
requests = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
searches = [r["query"].get("q", "") for r in requests if r["method"] == "GET" and r["path"] == "/search.html"]
print("searches:", searches, file=sys.stderr)
print(1 if any(q.strip().lower() == "astrolabe" for q in searches) else 0)
PY
