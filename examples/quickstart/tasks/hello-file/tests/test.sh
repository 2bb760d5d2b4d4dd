#!/usr/bin/env bash
# Reward 1 when hello.txt holds exactly the line "Hello, OpenForge!".
logs="${FORGE_LOGS:-/logs/verifier}"
if [ "$(cat hello.txt 2>/dev/null)" = "Hello, OpenForge!" ] && [ "$(wc -l < hello.txt)" -eq 1 ]; then
  echo "hello.txt is right"; echo 1 > "$logs/reward.txt"
else
  echo "hello.txt is missing or wrong:"; cat -A hello.txt 2>&1 | head -5; echo 0 > "$logs/reward.txt"
fi
