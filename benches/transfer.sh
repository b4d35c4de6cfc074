#!/usr/bin/env bash
# benches/transfer.sh: resource transfers of an old build against a new one (issue 27): the
# hand-written http client and ureq's thread per https transfer (old) against libcurl's multi
# interface for both (new), with curl as the limit, over plain http and over https (nginx with a
# self-signed certificate), in one run. Appends a section to benches/RESULTS.md.
#
#   benches/transfer.sh                           # build both, measure, append to RESULTS.md
#   benches/transfer.sh --old BIN --new BIN       # measure given binaries (no build)
#
# Options: --n N,N (resources, default 10000,100000), --size S (bytes each, default 8192),
#          --reps R (runs per step, default 3), --old-rev REV (default e206797: the last commit
#          with net/multi.rs), --new-rev REV (default HEAD), --old BIN / --new BIN (skip that
#          build; give --old-commit / --new-commit to name them), --old-trust BIN (the old build
#          with the trust patch below; built from --old-rev unless given), --no-old-trust,
#          --out FILE (default benches/RESULTS.md, appended to), --no-append (results only in
#          benches/.work/transfer/results.md), --smoke (N=300, 1 run, no append).
#
# The old build's https client (ureq with rustls) trusts only the webpki roots compiled into it
# and has no --ca-file, so it cannot fetch from the self-signed server; its step is run anyway
# (with SSL_CERT_FILE, which rustls ignores) and shows as failed. To measure its https path
# all the same, a second old binary carries a 20-line patch (TRUST_PATCH below, nothing else
# changed) that trusts the PEM file named by RSMIRROR_BENCH_CA_FILE.
#
# Builds are niced, each in its own target dir under benches/.work/transfer/ from a clean
# `git archive` of the revision. The sources (benches/transfer_bench.py gen: the resources once,
# the documents once per scheme) are reused while their arguments match; nginx (config, pid,
# logs in benches/.work/transfer/nginx) serves them on 127.0.0.1:18093 (http) and :18094 (TLS),
# or other free ports (BENCH_HTTP_PORT, BENCH_HTTPS_PORT), and is stopped on exit. Runs as root
# (caches are dropped before every run). About 15 minutes at the defaults once built; 10 GB of
# disk at the peak (every mirror is kept until the end).
set -uo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$HERE")
WORK=$HERE/.work/transfer
NS=10000,100000
SIZE=8192
REPS=3
OLD_REV=e206797
NEW_REV=HEAD
OLD=""; NEW=""; OLD_TRUST=""; OLD_COMMIT=""; NEW_COMMIT=""
TRUST=1
OUT=$HERE/RESULTS.md
APPEND=1
CMDLINE="benches/transfer.sh $*"

while [ $# -gt 0 ]; do
    case "$1" in
        --n) NS=$2; shift 2 ;;
        --size) SIZE=$2; shift 2 ;;
        --reps) REPS=$2; shift 2 ;;
        --old-rev) OLD_REV=$2; shift 2 ;;
        --new-rev) NEW_REV=$2; shift 2 ;;
        --old) OLD=$(realpath "$2"); shift 2 ;;
        --new) NEW=$(realpath "$2"); shift 2 ;;
        --old-trust) OLD_TRUST=$(realpath "$2"); shift 2 ;;
        --old-commit) OLD_COMMIT=$2; shift 2 ;;
        --new-commit) NEW_COMMIT=$2; shift 2 ;;
        --no-old-trust) TRUST=0; shift ;;
        --out) OUT=$(realpath "$2"); shift 2 ;;
        --no-append) APPEND=0; shift ;;
        --smoke) NS=300; REPS=1; APPEND=0; shift ;;
        -h|--help) sed -n '2,31p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "transfer.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
done

say() { echo "== $*" >&2; }
die() { echo "transfer.sh: $*" >&2; exit 1; }
mkdir -p "$WORK/bins"

# -- tools from Debian -----------------------------------------------------------------------
missing=()
command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || missing+=(nginx)
command -v curl >/dev/null 2>&1 || missing+=(curl)
[ -x /usr/bin/time ] || missing+=(time)
command -v openssl >/dev/null 2>&1 || missing+=(openssl)
command -v patch >/dev/null 2>&1 || missing+=(patch)
if [ ${#missing[@]} -gt 0 ]; then
    [ "$(id -u)" = 0 ] || die "missing ${missing[*]}; install them or run as root"
    DEBIAN_FRONTEND=noninteractive apt-get update -qq </dev/null \
        && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" </dev/null >/dev/null \
        || die "apt-get install ${missing[*]} failed"
fi
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
if ! command -v cargo >/dev/null 2>&1 && [ -x "$HOME/.cargo/bin/cargo" ]; then
    export PATH="$HOME/.cargo/bin:$PATH"
fi

# -- the binaries ----------------------------------------------------------------------------
# The old build's ureq agent, made to trust RSMIRROR_BENCH_CA_FILE (for this benchmark only).
TRUST_PATCH='--- a/src/net/agent.rs
+++ b/src/net/agent.rs
@@ -230,6 +230,23 @@ impl std::fmt::Debug for Http {
     }
 }
 
+/// benches/transfer.sh only (not in any release): trust the certificates of the PEM file
+/// named by RSMIRROR_BENCH_CA_FILE, as --ca-file does in later builds.
+fn bench_tls_config() -> ureq::tls::TlsConfig {
+    let mut tls = ureq::tls::TlsConfig::builder();
+    if let Some(path) = std::env::var_os("RSMIRROR_BENCH_CA_FILE") {
+        let pem = std::fs::read(&path).expect("RSMIRROR_BENCH_CA_FILE");
+        let certs: Vec<_> = ureq::tls::parse_pem(&pem)
+            .filter_map(|item| match item {
+                Ok(ureq::tls::PemItem::Certificate(c)) => Some(c),
+                _ => None,
+            })
+            .collect();
+        tls = tls.root_certs(ureq::tls::RootCerts::new_with_certs(&certs));
+    }
+    tls.build()
+}
+
 impl Http {
     pub fn new(cfg: HttpConfig) -> Http {
         let user_agent = if cfg.user_agent.trim().is_empty() {
@@ -239,6 +256,7 @@ impl Http {
         };
         let t = Some(cfg.timeout);
         let config = ureq::Agent::config_builder()
+            .tls_config(bench_tls_config())
             .timeout_resolve(t)
             .timeout_connect(t)
             .timeout_send_request(t)
'

# build NAME REV [PATCH]: a clean export of REV, built in its own target dir; prints the binary.
build() {
    local name=$1 rev=$2 patch=${3:-} src=$WORK/src-$1
    rm -rf "$src" && mkdir -p "$src"
    git -C "$ROOT" archive "$rev" | tar -x -C "$src" || die "git archive $rev failed"
    if [ -n "$patch" ]; then
        printf '%s' "$patch" | patch -s -p1 -d "$src" || die "the trust patch does not apply to $rev"
    fi
    say "building $name ($rev) in $src"
    CARGO_TARGET_DIR=$WORK/target-$name nice -n 10 cargo build --release --locked -q \
        --manifest-path "$src/Cargo.toml" </dev/null >&2 || die "cargo build of $name failed"
    cp "$WORK/target-$name/release/rsmirror" "$WORK/bins/rsmirror-$name"
    echo "$WORK/bins/rsmirror-$name"
}
short() { git -C "$ROOT" rev-parse --short=7 "$1^{commit}" 2>/dev/null || echo "$1"; }
OLD_NOTE="given binary"; NEW_NOTE="given binary"; TRUST_NOTE="given binary"
if [ -z "$OLD" ]; then
    OLD=$(build old "$OLD_REV") || exit 1; OLD_COMMIT=$(short "$OLD_REV"); OLD_NOTE="built by the script"
fi
if [ -z "$NEW" ]; then
    NEW=$(build new "$NEW_REV") || exit 1; NEW_COMMIT=$(short "$NEW_REV"); NEW_NOTE="built by the script"
fi
if [ "$TRUST" = 1 ] && [ -z "$OLD_TRUST" ]; then
    OLD_TRUST=$(build old-trust "$OLD_REV" "$TRUST_PATCH") || exit 1; TRUST_NOTE="built by the script"
fi
[ "$TRUST" = 1 ] || OLD_TRUST=""
OLD_COMMIT=${OLD_COMMIT:-$(short "$OLD_REV")}
NEW_COMMIT=${NEW_COMMIT:-$(short "$NEW_REV")}
"$NEW" baseline --help | grep -q -- --ca-file || die "$NEW has no --ca-file: not the new build"

# -- the certificate ---------------------------------------------------------------------------
TLS=$WORK/tls
if [ ! -s "$TLS/cert.pem" ]; then
    mkdir -p "$TLS"
    # Self-signed, for 127.0.0.1 and localhost; an end-entity certificate (CA:FALSE): webpki
    # (ureq, for the documents) refuses a CA certificate as the server's.
    openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -keyout "$TLS/key.pem" -out "$TLS/cert.pem" \
        -subj "/CN=127.0.0.1" -addext "subjectAltName=IP:127.0.0.1,DNS:localhost" \
        -addext "basicConstraints=critical,CA:FALSE" -addext "keyUsage=digitalSignature,keyEncipherment" \
        -addext "extendedKeyUsage=serverAuth" 2>/dev/null || die "openssl req failed"
fi
CA=$TLS/cert.pem

# -- ports, sources, nginx ---------------------------------------------------------------------
port_free() {
    python3 -c 'import socket, sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen()' "$1" 2>/dev/null
}
any_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
HP=${BENCH_HTTP_PORT:-18093}; SP=${BENCH_HTTPS_PORT:-18094}
port_free "$HP" || HP=$(any_port)
port_free "$SP" || SP=$(any_port)

SRCS=()
for n in ${NS//,/ }; do
    # Each N below its own prefix, /nN/ (the documents carry it, and the ports).
    python3 "$HERE/transfer_bench.py" gen --out "$WORK/src-$n" --n "$n" --size "$SIZE" \
        --http-base "http://127.0.0.1:$HP/n$n" --https-base "https://127.0.0.1:$SP/n$n" || die "gen failed"
    if python3 -c 'import json,sys; sys.exit(0 if json.load(open(sys.argv[1]))["regenerated"] else 1)' \
            "$WORK/src-$n/meta.json"; then
        date +%s.%N >"$HERE/.work/removed.stamp"   # an older generation was removed just now
    fi
    SRCS+=("$n=$WORK/src-$n")
done
SRC_ARG=$(IFS=,; echo "${SRCS[*]}")

NGX=$WORK/nginx
stop_nginx() {
    if [ -s "$NGX/nginx.pid" ]; then
        local pid; pid=$(cat "$NGX/nginx.pid")
        kill -QUIT "$pid" 2>/dev/null
        for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$pid" 2>/dev/null
        rm -f "$NGX/nginx.pid"
    fi
}
# Long commands run in the background and are waited for, so that INT / TERM reach the trap at
# once; the trap ends them (the Python helper kills the run in progress on TERM).
CHILD=""
stop_all() {
    [ -n "$CHILD" ] && kill -TERM "$CHILD" 2>/dev/null && wait "$CHILD" 2>/dev/null
    CHILD=""
    stop_nginx
}
trap stop_all EXIT
trap 'stop_all; exit 130' INT TERM
mkdir -p "$NGX/tmp"
USER_LINE=""
[ "$(id -u)" = 0 ] && USER_LINE="user root;"   # workers must read the tree under /work as its owner
# One server per scheme: /nN/r/... from src-N/res (the resources, shared by both schemes),
# /nN/... else from src-N/SCHEME (the documents).
cat >"$NGX/nginx.conf" <<NGINX_CONF
# Written by benches/transfer.sh; a static server fast enough not to limit the clients.
$USER_LINE
worker_processes auto;
pid $NGX/nginx.pid;
error_log $NGX/error.log warn;
events { worker_connections 4096; }
http {
  types { application/xml xml; }
  default_type application/octet-stream;
  access_log off;
  sendfile on;
  tcp_nopush on;
  tcp_nodelay on;
  keepalive_timeout 65;
  keepalive_requests 1000000;
  client_body_temp_path $NGX/tmp;
  proxy_temp_path $NGX/tmp;
  fastcgi_temp_path $NGX/tmp;
  uwsgi_temp_path $NGX/tmp;
  scgi_temp_path $NGX/tmp;
  server {
    listen 127.0.0.1:$HP;
    location ~ ^/n(\d+)/r/(.*)\$ { alias $WORK/src-\$1/res/r/\$2; }
    location ~ ^/n(\d+)/(.*)\$ { alias $WORK/src-\$1/http/\$2; }
  }
  server {
    # HTTP/1.1 only (no http2), as on the plain server; keep-alive as above.
    listen 127.0.0.1:$SP ssl;
    ssl_certificate $TLS/cert.pem;
    ssl_certificate_key $TLS/key.pem;
    ssl_protocols TLSv1.2 TLSv1.3;
    ssl_session_cache shared:SSL:10m;
    location ~ ^/n(\d+)/r/(.*)\$ { alias $WORK/src-\$1/res/r/\$2; }
    location ~ ^/n(\d+)/(.*)\$ { alias $WORK/src-\$1/https/\$2; }
  }
}
NGINX_CONF
stop_nginx   # a leftover from an interrupted run
say "starting nginx on 127.0.0.1:$HP (http) and :$SP (https)"
"$NGINX" -c "$NGX/nginx.conf" -p "$NGX" -e "$NGX/error.log" </dev/null || die "nginx did not start (see $NGX/error.log)"
n1=${NS%%,*}
for _ in $(seq 50); do curl -s -o /dev/null --cacert "$CA" "https://127.0.0.1:$SP/n$n1/rs/capabilitylist.xml" && break; sleep 0.1; done
for n in ${NS//,/ }; do
    curl -sf -o /dev/null "http://127.0.0.1:$HP/n$n/r/0000/0000000.bin" \
        && curl -sf -o /dev/null --cacert "$CA" "https://127.0.0.1:$SP/n$n/rs/capabilitylist.xml" \
        || die "nginx does not serve the source of N=$n (see $NGX/error.log)"
done
TLS_NOTE=$(curl -sv --cacert "$CA" -o /dev/null "https://127.0.0.1:$SP/n$n1/rs/capabilitylist.xml" 2>&1 \
    | sed -n 's/^\* SSL connection using \(.*\)$/\1/p' | head -1)
TLS_NOTE="TLS as curl negotiates it: ${TLS_NOTE:-?}; RSA 2048 key; no kTLS (sendfile for plain http only)"

# -- the measurements --------------------------------------------------------------------------
RESULT=$WORK/results.md
say "measuring N=$NS, $REPS runs per step: old $OLD ($OLD_COMMIT), new $NEW ($NEW_COMMIT)${OLD_TRUST:+, old + trust patch $OLD_TRUST}"
python3 "$HERE/transfer_bench.py" run --work "$WORK/run" --repo "$ROOT" --src "$SRC_ARG" --size "$SIZE" \
    --reps "$REPS" --old "$OLD" --new "$NEW" --old-trust "$OLD_TRUST" \
    --old-commit "$OLD_COMMIT" --new-commit "$NEW_COMMIT" --old-note "$OLD_NOTE" --new-note "$NEW_NOTE" \
    --old-trust-note "\`$OLD_COMMIT\` + the script's TRUST_PATCH ($TRUST_NOTE)" \
    --ca "$CA" --nginx-pid "$(cat "$NGX/nginx.pid")" --nginx-version "$("$NGINX" -v 2>&1 | sed 's/nginx version: //')" \
    --tls-note "$TLS_NOTE" --removed-stamp "$HERE/.work/removed.stamp" --command "$CMDLINE" \
    --out "$RESULT" </dev/null &
CHILD=$!; wait "$CHILD"; rc=$?; CHILD=""
[ $rc -eq 0 ] || die "the measurements failed (exit $rc); runs so far in $WORK/run/runs.json"
if [ "$APPEND" = 1 ]; then
    { echo; cat "$RESULT"; } >>"$OUT"
    say "appended $RESULT to $OUT"
else
    say "wrote $RESULT"
fi
