#!/usr/bin/env bash
# Reward 1 when total.txt holds the sum of stock.csv's counts (42) and nothing else.
logs="${FORGE_LOGS:-/logs/verifier}"
if [ "$(cat total.txt 2>/dev/null)" = "42" ]; then
  echo "total.txt is right"; echo 1 > "$logs/reward.txt"
else
  echo "total.txt is missing or wrong:"; cat -A total.txt 2>&1 | head -5; echo 0 > "$logs/reward.txt"
fi
