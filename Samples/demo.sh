#!/usr/bin/env bash
# Parley demo without a sound card: a relay and two bots in a room; alice speaks (espeak-ng), bob records what he
# hears to Samples/out/bob-heard.wav. Run from anywhere after `make release` (or it builds for you):
#
#   Samples/demo.sh            # forward mode
#   Samples/demo.sh mix        # the relay mixes instead
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export PATH="/opt/swift/usr/bin:$PATH"
mode="${1:-forward}"
out=Samples/out
mkdir -p "$out"
command -v espeak-ng >/dev/null || { echo "demo: needs espeak-ng (apt-get install espeak-ng)"; exit 1; }
if [ ! -x .build/release/parley ] || [ ! -x .build/release/parley-relay ]; then
    echo "demo: building parley and parley-relay (release, a few minutes the first time)"
    swift build -c release --product parley-relay
    swift build -c release --product parley
fi

espeak-ng -w "$out/alice-says.wav" "Hello Bob. This is Alice, talking to you through a Parley relay, with no sound card at all."
port=$((20000 + RANDOM % 20000))
.build/release/parley-relay --udp "127.0.0.1:$port" --http 127.0.0.1:0 --log-level warning &
relay=$!
trap 'kill $relay 2>/dev/null; wait $relay 2>/dev/null' EXIT
sleep 0.5
.build/release/parley join demo --mode "$mode" --identity bob --server "127.0.0.1:$port" --listen-only \
    --output "$out/bob-heard.wav" --duration 9 --no-tui &
bob=$!
sleep 0.5
.build/release/parley join demo --mode "$mode" --identity alice --server "127.0.0.1:$port" \
    --input "$out/alice-says.wav" --no-playback --no-tui
wait $bob
echo
echo "alice said: $out/alice-says.wav"
echo "bob heard:  $out/bob-heard.wav   (play it with: aplay $out/bob-heard.wav, or open it in any audio player)"
