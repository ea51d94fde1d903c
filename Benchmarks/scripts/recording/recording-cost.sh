#!/usr/bin/env bash
# What recording costs the relay: CPU per recorded room against the same rooms not recorded, in one run.
#
#   Benchmarks/scripts/recording/recording-cost.sh [MODE] [ROOMS] [BLOCKS]     (defaults: forward 20 6; after `make release`)
#
# One relay (1 worker, its own state directory) and parley-load: ROOMS rooms of 10 members, 3 of them speaking
# pre-encoded Opus speech, for the whole run. After the joins, BLOCKS blocks of 8 s alternate the rooms between
# recorded and not (off on, on off, off on, …, so a drift in the machine's load falls on both sides alike): before
# each block every room's recording is started or stopped through `parley record`. The relay's CPU (every thread,
# the recorder's too: /proc/PID/stat) is read over each block's last 6 s. Prints each block, then the medians, the
# difference per recorded room, and what the recordings hold on disk.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../../.."
mode=${1:-forward}
rooms=${2:-20}
blocks=${3:-6}
relay=.build/release/parley-relay
parley=.build/release/parley
load=.build/release/parley-load
[[ -x $relay && -x $parley && -x $load ]] || { echo "recording-cost.sh: run 'make release' first" >&2; exit 2; }
dir=$(mktemp -d)
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; sleep 0.5; rm -rf "$dir"' EXIT
base=$((20000 + RANDOM % 20000))
PARLEY_MAX_ROOMS=$((rooms + 10)) PARLEY_JOINS_PER_SECOND=1000 \
    $relay --udp 127.0.0.1:$base --http 127.0.0.1:$((base + 1)) --workers 1 --state-dir "$dir/state" --log-level warning \
    >"$dir/relay.log" 2>&1 & relay_pid=$!; pids+=($relay_pid)
export PARLEY_URL=http://127.0.0.1:$((base + 1))
sleep 1
seconds=$((blocks * 8 + 10))
$load --server 127.0.0.1:$base --relay-pid "$relay_pid" --rooms "$rooms" --members 10 --speakers 3 --mode "$mode" \
    --duration "$seconds" --ramp 2 >"$dir/load.log" 2>&1 & pids+=($!)
sleep 5   # every member joined, media flowing

cpu() {  # the relay's user + system CPU seconds (clock ticks of /proc/PID/stat)
    awk -v hz="$(getconf CLK_TCK)" '{ sub(/.*\) /, ""); print ($12 + $13) / hz }' "/proc/$relay_pid/stat"
}
set_recording() {  # on|off for every room
    local names
    names=$($parley rooms list | awk '{ print $1 }' | grep -v '^no$' || true)
    for r in $names; do
        if [[ $1 == on ]]; then $parley record start "$r" >/dev/null; else $parley record stop "$r" >/dev/null; fi
    done
}

state=off
off=(); on=()
for k in $(seq 1 "$blocks"); do
    # off on | on off | off on …
    if (( (k - 1) % 4 == 0 || (k - 1) % 4 == 3 )); then want=off; else want=on; fi
    [[ $want != "$state" ]] && set_recording "$want" && state=$want
    sleep 2
    c0=$(cpu); t0=$(date +%s.%N)
    sleep 6
    c1=$(cpu); t1=$(date +%s.%N)
    share=$(awk -v c0="$c0" -v c1="$c1" -v t0="$t0" -v t1="$t1" 'BEGIN { print (c1 - c0) / (t1 - t0) * 100 }')
    printf "block %d  %-3s  relay CPU %6.2f %%\n" "$k" "$state" "$share"
    if [[ $state == on ]]; then on+=("$share"); else off+=("$share"); fi
done
[[ $state == on ]] && set_recording off
median() { printf "%s\n" "$@" | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
m_off=$(median "${off[@]}"); m_on=$(median "${on[@]}")
per_room=$(awk -v on="$m_on" -v off="$m_off" -v n="$rooms" 'BEGIN { print (on - off) / n * 10 }')   # % of a core → CPU-ms per second
sleep 1
files=$(find "$dir/state/recordings" -name '*.opus' | wc -l)
bytes=$(find "$dir/state/recordings" -name '*.opus' -printf '%s\n' | awk '{ s += $1 } END { print s + 0 }')
printf "%s rooms of 10 (3 speaking), mode %s, 1 worker: relay CPU median %.2f %% not recorded, %.2f %% recorded\n" "$rooms" "$mode" "$m_off" "$m_on"
printf "recording costs %.3f CPU-ms per room per second (%.2f %% of the unrecorded cost); %d files, %d bytes written\n" \
    "$per_room" "$(awk -v on="$m_on" -v off="$m_off" 'BEGIN { print (on - off) / off * 100 }')" "$files" "$bytes"
grep -E "delivered|loss" "$dir/load.log" | tail -3 || true
