#!/usr/bin/env bash
# The verifier's exit code decides (no reward file): 0 when sum.txt holds the sum.
expected=$(awk '{ s += $1 } END { print s }' numbers.txt)
got=$(tr -d '[:space:]' < sum.txt 2>/dev/null)
echo "expected $expected, got ${got:-<no sum.txt>}"
[ "$got" = "$expected" ]
