#!/usr/bin/env bash
# The crash matrix at a larger size than CI runs: baseline, incremental, audit, export and
# repair runs of a ResourceSync source (three quarters of the kills) and SCP, ARC and Change
# Dump runs (a quarter) SIGKILLed at random moments, each followed by a re-run and the
# invariants (integrity_check, every object its digest, staging emptied, sync point never
# ahead, the mirror equal to the source or to an uninterrupted mirror, an offline audit
# clean); and every named kill point (RSMIRROR_KILL_AT, the same each seed). Prints the
# tallies of each seed.
#
#   benches/crash.sh [KILLS_PER_SEED] [SEEDS]      # default: 1000 kills x 3 seeds
set -euo pipefail
cd "$(dirname "$0")/.."
KILLS=${1:-1000}
SEEDS=${2:-3}
cargo build --locked --tests -q
for s in $(seq 1 "$SEEDS"); do
  RSMIRROR_CRASH_KILLS=$KILLS RSMIRROR_CRASH_SEED=$((s * 104729)) \
    cargo test --locked -q --test it crash:: -- --nocapture 2>&1 | grep -E "crash matrix|panicked|assert"
done
