#!/usr/bin/env bash
# Every door a stranger can reach, without a network: libFuzzer on the
# frame parser, the lane state machine, [auth] (frames as they arrive,
# genuine frames edited, key files), the config file and --set, and a
# client's channel as the gateway reads it (test/fuzz), 10 s each,
# from the corpora kept in build/fuzz-corpus so that each run builds on the
# last. One line per target (executions, "no crash"); a crash, hang or leak
# fails the test and names the input that reproduces it.
# Longer on demand: ./scripts/gw fuzz SECONDS [TARGET...].
# gw-timeout: 270
# gw-lane: apart
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
exec test/fuzz/run.sh 10
