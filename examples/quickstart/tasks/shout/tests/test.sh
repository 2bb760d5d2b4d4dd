#!/usr/bin/env bash
# Exit code decides: output.txt must be input.txt in upper case, byte for byte.
diff <(tr '[:lower:]' '[:upper:]' < input.txt) output.txt
