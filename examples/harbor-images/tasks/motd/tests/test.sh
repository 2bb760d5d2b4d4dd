#!/bin/bash
# Scores whether this runs in the task's own image: /etc/forge-motd is in no other.
logs="${FORGE_LOGS:-/logs/verifier}"
if [ "$(cat /etc/forge-motd 2>/dev/null)" = "forge motd 7f3a" ]; then
  echo "in the motd task's image"; echo 1 > "$logs/reward.txt"
else
  echo "not in the motd task's image: no /etc/forge-motd"; echo 0 > "$logs/reward.txt"
fi
