#!/usr/bin/env bash
# The HTTP API hammered while the relay forwards media: GET /v1/rooms latency with ROOMS extra (empty) rooms, and
# parley-load's delivery ratio with and without the API traffic, on one relay.
# usage: Benchmarks/scripts/api/api-under-load.sh [ROOMS=1000] [SECONDS=20]   (release builds in .build/release)
set -euo pipefail
ROOMS=${1:-1000}; SECONDS_LOAD=${2:-20}
BIN=${BIN:-.build/release}
OUT=$(mktemp -d)
PARLEY_MAX_ROOMS=$((ROOMS + 100)) "$BIN/parley-relay" --udp 127.0.0.1:0 --http 127.0.0.1:0 --workers 2 --log-level warning \
    >"$OUT/relay.out" 2>"$OUT/relay.err" &
RELAY=$!
trap 'kill $RELAY 2>/dev/null; rm -rf "$OUT"' EXIT
for _ in $(seq 50); do grep -q "ready on udp" "$OUT/relay.out" && break; sleep 0.1; done
UDP=$(grep -o 'ready on udp 127.0.0.1:[0-9]*' "$OUT/relay.out" | awk '{print $4}')
HTTP=$(grep -o 'http 127.0.0.1:[0-9]*' "$OUT/relay.out" | awk '{print $2}')
TOKEN=$("$BIN/parley" token --admin --identity bench)
for i in $(seq 1 "$ROOMS"); do
  curl -s -o /dev/null -H "Authorization: Bearer $TOKEN" -d "{\"name\":\"bench-$i\"}" "http://$HTTP/v1/rooms"
done
# parley-load exits 3/4/5 when members were missing or its own send ticks ran late; the ratio is still printed, with why.
load() {
  "$BIN/parley-load" --server "$UDP" --relay-pid "$RELAY" --rooms 10 --members 10 --speakers 3 --duration "$SECONDS_LOAD" --json "$1" >/dev/null ||
    echo "parley-load exited $? for $(basename "$1" .json): $(grep -o '"problems":\[[^]]*\]' "$1")"
}
ratio() { grep -o '"delivery_ratio":[0-9.e-]*' "$1" | cut -d: -f2; }
load "$OUT/quiet.json"
( while true; do curl -s -o /dev/null -w '%{time_total}\n' -H "Authorization: Bearer $TOKEN" "http://$HTTP/v1/rooms"; done ) > "$OUT/times" &
HAMMER=$!
load "$OUT/hammered.json"
kill $HAMMER
sort -n "$OUT/times" > "$OUT/sorted"
p() { awk -v q="$1" '{a[NR]=$1} END {i=int(NR*q); if (i<1) i=1; printf "%.1f ms", a[i]*1000}' "$OUT/sorted"; }
echo "GET /v1/rooms with $ROOMS+ rooms while 100 members talk (10 rooms × 10, 3 speakers): $(wc -l < "$OUT/sorted") requests, p50 $(p 0.50), p99 $(p 0.99)"
echo "media delivery ratio: without API load $(ratio "$OUT/quiet.json"), while the API is hammered $(ratio "$OUT/hammered.json")"
