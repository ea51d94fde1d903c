#!/bin/bash
# Join to first audio for a browser: headless Chromium opens the sample page (Samples/web) in listen mode, which posts
# its offer to the relay's /v1/rooms/{room}/webrtc and notes when the first RTP packet arrived (getStats polled every
# 10 ms from the moment it started to join: offer made, posted, answered, ICE check, DTLS handshake, first packet).
# A parley join speaks a tone in the room throughout. RUNS browsers one after another; prints each and the median.
#
#   make release && Benchmarks/scripts/webrtc/webrtc-join.sh [RUNS]        (needs chromium; make test installs it)
set -euo pipefail
RUNS=${1:-10}
BIN=${BIN:-.build/release}
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$work"' EXIT
PARLEY_STATE_DIR=$work/state PARLEY_WEB_ROOT=Samples/web $BIN/parley-relay --udp 127.0.0.1:0 --http 127.0.0.1:0 --workers 1 \
  > "$work/relay.log" 2>&1 &
for _ in $(seq 50); do grep -q "ready on udp" "$work/relay.log" && break; sleep 0.1; done
line=$(grep "ready on udp" "$work/relay.log")
udp=$(echo "$line" | grep -oE "udp 127.0.0.1:[0-9]+" | cut -d' ' -f2)
http=$(echo "$line" | grep -oE "http 127.0.0.1:[0-9]+" | cut -d' ' -f2)
$BIN/parley join bench --identity tone --server "$udp" --tone 440 --no-playback --no-tui --duration $((RUNS * 8 + 10)) > "$work/tone.log" 2>&1 &
sleep 1
results=()
for i in $(seq "$RUNS"); do
  token=$($BIN/parley token --identity "web$i" --room bench)
  ms=$(timeout 30 chromium --headless=new --no-sandbox --autoplay-policy=no-user-gesture-required --no-first-run \
      --allow-loopback-in-peer-connection --user-data-dir="$work/profile$i" --enable-logging=stderr --v=0 \
      "http://$http/?room=bench&token=$token&join=1&listen=1&report=1" 2>&1 \
    | grep -a "PARLEY RESULT" | grep -oE '"firstPacketMs":[0-9]+' | cut -d: -f2 || true)
  echo "run $i: join to first audio ${ms:-none} ms"
  [ -n "$ms" ] && results+=("$ms")
done
printf '%s\n' "${results[@]}" | sort -n | awk '{a[NR]=$1} END {if (NR) printf "browser join to first audio over %d runs: median %d ms, min %d, max %d\n", NR, a[int((NR+1)/2)], a[1], a[NR]}'
