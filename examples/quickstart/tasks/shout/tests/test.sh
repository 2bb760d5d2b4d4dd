#!/usr/bin/env bash
# The exit code decides (task.toml declares [verifier] reward = "exit-code"): output.txt must be
# input.txt in upper case, byte for byte.
diff <(tr '[:lower:]' '[:upper:]' < input.txt) output.txt
