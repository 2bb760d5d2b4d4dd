#!/usr/bin/env bash
# reward.json: the share of names greeted correctly.
logs="${FORGE_LOGS:-/logs/verifier}"
ok=0
for name in World Ada "Grace Hopper"; do
  out=$(timeout 5 bash greet.sh "$name" 2>&1)
  if [ "$out" = "Hello, $name!" ]; then ok=$((ok + 1)); else echo "bash greet.sh '$name' printed: $out"; fi
done
echo "$ok/3 greetings right"
if [ "$ok" -eq 3 ]; then echo '{"reward": 1.0}' > "$logs/reward.json"; else echo '{"reward": 0.0}' > "$logs/reward.json"; fi
