#!/usr/bin/env bash
# API latency: GET /v1/rooms with ROOMS rooms (created through POST), measured with curl's %{time_total}
# over N requests; prints p50/p99. Starts its own relay (release build) on ephemeral ports.
# usage: Benchmarks/scripts/api/api-latency.sh [ROOMS=1000] [N=500]   (BIN=dir of parley-relay/parley, default .build/release)
set -euo pipefail
ROOMS=${1:-1000}; N=${2:-500}
BIN=${BIN:-.build/release}
OUT=$(mktemp -d)
"$BIN/parley-relay" --udp 127.0.0.1:0 --http 127.0.0.1:0 --workers 2 --log-level warning >"$OUT/relay.out" 2>"$OUT/relay.err" &
RELAY=$!
trap 'kill $RELAY 2>/dev/null; rm -rf "$OUT"' EXIT
for _ in $(seq 50); do grep -q "ready on udp" "$OUT/relay.out" && break; sleep 0.1; done
PORT=$(grep -o 'http 127.0.0.1:[0-9]*' "$OUT/relay.out" | cut -d: -f2)
URL=http://127.0.0.1:$PORT
TOKEN=$("$BIN/parley" token --admin --identity bench)
echo "creating $ROOMS rooms (PARLEY_MAX_ROOMS must allow them; default 1000)"
for i in $(seq 1 "$ROOMS"); do
  curl -s -o /dev/null -H "Authorization: Bearer $TOKEN" -d "{\"name\":\"bench-$i\"}" "$URL/v1/rooms"
done
sleep 0.3
COUNT=$(curl -s -H "Authorization: Bearer $TOKEN" "$URL/v1/rooms" | grep -o '"name"' | wc -l)
echo "rooms listed: $COUNT; body $(curl -s -H "Authorization: Bearer $TOKEN" "$URL/v1/rooms" | wc -c) bytes"
for _ in $(seq 1 "$N"); do
  curl -s -o /dev/null -w '%{time_total}\n' -H "Authorization: Bearer $TOKEN" "$URL/v1/rooms"
done | sort -n > "$OUT/times"
p() { awk -v q="$1" '{a[NR]=$1} END {i=int(NR*q); if (i<1) i=1; printf "%.2f ms", a[i]*1000}' "$OUT/times"; }
echo "GET /v1/rooms with $COUNT rooms, $N requests (new curl process and connection each): p50 $(p 0.50), p99 $(p 0.99)"
