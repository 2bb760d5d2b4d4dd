#!/usr/bin/env bash
# A prompt task: the harness's final answer (its stdout, $FORGE_HARNESS_STDOUT) must name Paris.
# The reward goes to $FORGE_LOGS/reward.txt, a directory only the verifier can write.
logs="${FORGE_LOGS:-/logs/verifier}"
if grep -q "Paris" "$FORGE_HARNESS_STDOUT"; then
  echo "answer names Paris"; echo 1 > "$logs/reward.txt"
else
  echo "answer does not name Paris:"; cat "$FORGE_HARNESS_STDOUT"; echo 0 > "$logs/reward.txt"
fi
