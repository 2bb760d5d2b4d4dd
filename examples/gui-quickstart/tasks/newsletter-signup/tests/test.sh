#!/usr/bin/env bash
# Passes when the site received the subscription form with the right name and email, from the
# browser (the site server recorded it in $FORGE_SITE_LOG, which the agent could not write).
python3 - "$FORGE_SITE_LOG" > "$FORGE_LOGS/reward.txt" <<'PY'
import json, sys
requests = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
posts = [r for r in requests if r["method"] == "POST" and r["path"] == "/subscribe.html"]
ok = any(r.get("form", {}).get("email", "").strip().lower() == "ada@example.com"
         and r.get("form", {}).get("name", "").strip() == "Ada Lovelace" for r in posts)
print(json.dumps(posts), file=sys.stderr)
print(1 if ok else 0)
PY
