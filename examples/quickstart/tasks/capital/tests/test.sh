#!/usr/bin/env bash
# A prompt task: the harness's final answer (its stdout, $FORGE_HARNESS_STDOUT) must name Paris.
if grep -q "Paris" "$FORGE_HARNESS_STDOUT"; then echo "answer names Paris"; exit 0; fi
echo "answer does not name Paris:"; cat "$FORGE_HARNESS_STDOUT"; exit 1
