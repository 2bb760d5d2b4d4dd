#!/usr/bin/env bash
# Passes when the shop's cart API got exactly one item, the blue mug (recorded by the site server
# in $FORGE_SITE_LOG, out of the agent's reach).
python3 - "$FORGE_SITE_LOG" > "$FORGE_LOGS/reward.txt" <<'PY'
import json, sys
requests = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
added = [r.get("json", {}).get("add") for r in requests if r["method"] == "POST" and r["path"] == "/api/cart" and isinstance(r.get("json"), dict)]
print("cart:", added, file=sys.stderr)
print(1 if added == ["blue-mug"] else 0)
PY
