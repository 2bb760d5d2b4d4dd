#!/bin/bash
# Scores whether this runs in the dataset task's image: /srv/dataset.csv is in no other.
logs="${FORGE_LOGS:-/logs/verifier}"
if [ -f /srv/dataset.csv ] && [ "$(tail -n +2 /srv/dataset.csv | wc -l)" -eq 3 ]; then
  echo "in the dataset task's image"; echo 1 > "$logs/reward.txt"
else
  echo "not in the dataset task's image: no /srv/dataset.csv"; echo 0 > "$logs/reward.txt"
fi
