#!/usr/bin/env bash
# Parley demo without a sound card: a relay and two bots in a room; alice speaks (espeak-ng), bob records what he
# hears to Samples/out/bob-heard.wav. Run from anywhere after `make release` (or it builds for you):
#
#   Samples/demo.sh            # forward mode
#   Samples/demo.sh mix        # the relay mixes instead
#
# The relay keeps its key and database in a temporary directory, removed at exit (never /var/lib/parley-relay or
# your home); each line says whose it is ([relay], [alice], [bob]). PARLEY_BIN_DIR runs other builds of the programs
# (the tests use it with the debug build); PARLEY_DEMO_OUT writes the WAV files elsewhere.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export PATH="/opt/swift/usr/bin:$PATH"
mode="${1:-forward}"
out="${PARLEY_DEMO_OUT:-Samples/out}"
bin="${PARLEY_BIN_DIR:-.build/release}"
mkdir -p "$out"
command -v espeak-ng >/dev/null || { echo "demo: needs espeak-ng (apt-get install espeak-ng)"; exit 1; }
if [ ! -x "$bin/parley" ] || [ ! -x "$bin/parley-relay" ]; then
    [ -z "${PARLEY_BIN_DIR:-}" ] || { echo "demo: no parley and parley-relay in $bin"; exit 1; }
    echo "demo: building parley and parley-relay (release, a few minutes the first time)"
    swift build -c release --product parley-relay
    swift build -c release --product parley
fi

espeak-ng -w "$out/alice-says.wav" "Hello Bob. This is Alice, talking to you through a Parley relay, with no sound card at all."
state=$(mktemp -d)
port=$((20000 + RANDOM % 20000))
# Each program's lines (stdout and stderr) prefixed with whose they are; sed -u passes each on at once. The bots read
# nothing: without a terminal `parley join` would send each line of its stdin as a text.
"$bin/parley-relay" --udp "127.0.0.1:$port" --http 127.0.0.1:0 --state-dir "$state" --log-level warning \
    > >(sed -u 's/^/[relay] /') 2>&1 < /dev/null &
relay=$!
trap 'kill $relay 2>/dev/null; wait $relay 2>/dev/null; rm -rf "$state"' EXIT
sleep 0.5
"$bin/parley" join demo --mode "$mode" --identity bob --server "127.0.0.1:$port" --listen-only \
    --output "$out/bob-heard.wav" --duration 9 --no-tui < /dev/null 2>&1 | sed -u 's/^/[bob] /' &
bob=$!
sleep 0.5
"$bin/parley" join demo --mode "$mode" --identity alice --server "127.0.0.1:$port" \
    --input "$out/alice-says.wav" --no-playback --no-tui < /dev/null 2>&1 | sed -u 's/^/[alice] /'
wait $bob
echo
echo "alice said: $out/alice-says.wav"
echo "bob heard:  $out/bob-heard.wav   (play it with: aplay $out/bob-heard.wav, or open it in any audio player)"
