#!/usr/bin/env bash
# sum.txt must hold the sum of numbers.txt; the reward goes to $FORGE_LOGS/reward.txt.
logs="${FORGE_LOGS:-/logs/verifier}"
expected=$(awk '{ s += $1 } END { print s }' numbers.txt)
got=$(tr -d '[:space:]' < sum.txt 2>/dev/null)
echo "expected $expected, got ${got:-<no sum.txt>}"
if [ "$got" = "$expected" ]; then echo 1 > "$logs/reward.txt"; else echo 0 > "$logs/reward.txt"; fi
