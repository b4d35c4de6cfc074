#!/usr/bin/env bash
# benches/audit_ab.sh: a side-by-side of rsmirror builds auditing one mirror, for changes to
# `audit` (issue 24): each build's `audit` (against the source the mirror remembers) and
# `audit --offline`, the builds alternating, the page cache dropped before each run; wall, user
# and system seconds and peak RSS (`/usr/bin/time`), with the exit code (1: differences found,
# which a mirror one incremental behind its source has).
#
#   benches/audit_ab.sh [--reps R] [--steps "audit offline"] MIRROR BIN [BIN...]
#
# MIRROR: a mirror whose source is served, e.g. the 10,000,000 one of benches/scale.sh:
#   nginx -c "$PWD/benches/.work/scale/nginx/nginx.conf"
#   benches/audit_ab.sh benches/.work/scale/kept/mirror-10M old/rsmirror target/release/rsmirror
# An environment variable given as BIN=VAR=VALUE (e.g. target/release/rsmirror=RSMIRROR_AUDIT_PASS_RESOURCES=125000)
# runs that build with it. Options: --reps R (default 1), --steps (default "audit offline").
set -euo pipefail
REPS=1
STEPS="audit offline"
while [ $# -gt 0 ]; do
    case $1 in
        --reps) REPS=$2; shift 2 ;;
        --steps) STEPS=$2; shift 2 ;;
        -h|--help) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) break ;;
    esac
done
[ $# -ge 2 ] || { echo "audit_ab.sh: give MIRROR and at least one binary" >&2; exit 2; }
MIRROR=$1; shift
[ -x /usr/bin/time ] || { apt-get update -qq && apt-get install -y -qq time >/dev/null; }
printf '%-72s %-8s %4s %9s %8s %8s %9s\n' build step exit "wall s" "user s" "sys s" "RSS MiB"
for r in $(seq "$REPS"); do
    for step in $STEPS; do
        for b in "$@"; do
            bin=${b%%=*}
            env=()
            [ "$bin" != "$b" ] && env=("${b#*=}")
            args=(audit --mirror "$MIRROR" -q)
            [ "$step" = offline ] && args+=(--offline)
            sync
            echo 3 > /proc/sys/vm/drop_caches 2>/dev/null || true
            OUT=$(mktemp)
            set +e
            env "${env[@]}" /usr/bin/time -f "%x %e %U %S %M" -o "$OUT" "$bin" "${args[@]}" > /dev/null 2>&1
            set -e
            read -r code wall user sys rss < <(tail -1 "$OUT")
            rm -f "$OUT"
            printf '%-72s %-8s %4s %9.2f %8.2f %8.2f %9.1f\n' "$b" "$step" "$code" "$wall" "$user" "$sys" "$(echo "$rss / 1024" | bc -l)"
        done
    done
done
