#!/usr/bin/env bash
# The corruption matrix at a larger size than CI runs: faults injected into copies of a clean
# mirror (bit flips, truncation, deletion, swaps, stray files, altered catalog rows, garbage in
# catalog pages, a lost -wal), `audit --offline --all-versions` on each; every fault that changes
# anything must be found, nothing on clean copies, no panic. Prints the tally of each seed.
#
#   benches/corruption.sh [COPIES_PER_SEED] [SEEDS]      # default: 300 copies x 4 seeds
set -euo pipefail
cd "$(dirname "$0")/.."
COPIES=${1:-300}
SEEDS=${2:-4}
cargo build --locked --tests -q
for s in $(seq 1 "$SEEDS"); do
  RSMIRROR_CORRUPTION_COPIES=$COPIES RSMIRROR_CORRUPTION_SEED=$((s * 7919)) \
    cargo test --locked -q --test it corruption:: -- --nocapture 2>&1 | grep "corruption matrix"
done
