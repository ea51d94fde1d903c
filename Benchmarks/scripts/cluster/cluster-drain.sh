#!/usr/bin/env bash
# The longest silence a room's members hear while one node of the cluster drains (`parley-relay drain`).
#
#   Benchmarks/scripts/cluster/cluster-drain.sh [RUNS] [drain|kill]   (default 3 drain; after `make release`; needs redis-server)
#
# With `kill`, node 1 is killed with `kill -9` instead (keepalive 1 s): the talker fails over to another node by itself
# and the figure is how long the listeners heard nothing.
#
# Each run: a Redis and three relays (1 worker each, cascade_after 0: each node takes the joins that reach it) on
# loopback ports; a talker (a 440 Hz tone, never silent) joins through node 1 and a listener through each of nodes 2
# and 3; after 2 s node 1 drains: the talker moves to another node and the room's cascade carries it on. Each listener
# prints the longest time between two packets it received (`parley join`'s summary) and records what it played; the
# run's figures are the larger of the two listeners': that gap, and the longest silence in the recordings (10 ms
# windows under a tenth of the tone's level, between its first and last sound); then the medians over runs. Everything it starts is stopped at the end of each run.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../../.."
runs=${1:-3}
how=${2:-drain}
[[ $how == drain || $how == kill ]] || { echo "cluster-drain.sh: the second argument is drain or kill" >&2; exit 2; }
relay=.build/release/parley-relay
parley=.build/release/parley
[[ -x $relay && -x $parley ]] || { echo "cluster-drain.sh: run 'make release' first" >&2; exit 2; }
command -v redis-server >/dev/null || { echo "cluster-drain.sh: redis-server is missing (apt-get install redis-server)" >&2; exit 2; }
dir=$(mktemp -d)
pids=()
stop() { for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done; pids=(); }
trap 'stop; rm -rf "$dir"' EXIT
gaps=(); silences=()
for run in $(seq 1 "$runs"); do
    base=$((20000 + RANDOM % 20000))
    redis-server --port "$base" --bind 127.0.0.1 --save "" --appendonly no >"$dir/redis.log" 2>&1 & pids+=($!); disown $!
    sleep 0.5
    for n in 1 2 3; do
        PARLEY_CLUSTER=redis://127.0.0.1:$base PARLEY_NODE_ID=node$n PARLEY_CASCADE_AFTER=0 PARLEY_KEEPALIVE_INTERVAL_S=1 \
            $relay --udp 127.0.0.1:$((base + n * 10)) --http 127.0.0.1:$((base + n * 10 + 1)) --workers 1 \
            --state-dir "$dir/state$n" >"$dir/node$n.log" 2>&1 & pids+=($!); disown $!
        [[ $n == 1 ]] && node1=$!
    done
    sleep 3   # the nodes registered and each knows the others
    room=drain-$run-$RANDOM
    $parley join "$room" --identity talker --server 127.0.0.1:$((base + 10)) --tone 440 --no-playback --no-tui --duration 8 \
        >"$dir/talker.log" 2>&1 & pids+=($!); disown $!
    sleep 0.5
    for n in 2 3; do
        $parley join "$room" --identity ear$n --server 127.0.0.1:$((base + n * 10)) --listen-only --output "$dir/ear$n.wav" --no-tui --duration 6 --verbose \
            >"$dir/ear$n.log" 2>&1 & pids+=($!)
    done
    ears=("${pids[@]: -2}")
    sleep 2
    if [[ $how == drain ]]; then $relay drain --http 127.0.0.1:$((base + 11)); else kill -9 "$node1"; fi
    for p in "${ears[@]}"; do wait "$p" || true; done
    worst=0; silent=0
    for n in 2 3; do
        g=$(grep -o "longest gap between received packets: [0-9]*" "$dir/ear$n.log" | grep -o "[0-9]*$" || echo "")
        [[ -n $g ]] || { echo "run $run: ear$n printed no gap"; cat "$dir/ear$n.log"; g=99999; }
        (( g > worst )) && worst=$g
        # What was heard: the longest run of 10 ms windows below a tenth of the tone's level, between its first and
        # last sound (the new stream's jitter buffer start-up included).
        s=$(python3 - "$dir/ear$n.wav" <<'PY'
import sys, wave, struct, math
w = wave.open(sys.argv[1]); rate = w.getframerate(); data = w.readframes(w.getnframes())
x = struct.unpack('<%dh' % (len(data) // 2), data)
step = rate // 100
rms = [math.sqrt(sum(v * v for v in x[i:i + step]) / step) for i in range(0, len(x) - step, step)]
loud = sorted(rms)[len(rms) * 3 // 4] if rms else 0
on = [i for i, r in enumerate(rms) if r > loud / 10]
run = best = 0
for r in rms[on[0]:on[-1] + 1] if on else []:
    run = run + 1 if r <= loud / 10 else 0
    best = max(best, run)
print(best * 10)
PY
)
        (( s > silent )) && silent=$s
    done
    grep -q "moving to\|rejoining through" "$dir/talker.log" || echo "run $run: the talker did not move"
    printf 'run %d (%s): longest time between packets a listener received: %d ms; longest silence heard: %d ms\n' \
        "$run" "$how" "$worst" "$silent"
    gaps+=("$worst"); silences+=("$silent")
    stop
done
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
goal=$([[ $how == drain ]] && echo "no gap over 200 ms" || echo "heard again within 3 s")
printf 'median over %d runs: %d ms between packets, %d ms of silence heard (goal: %s)\n' "${#gaps[@]}" \
    "$(median "${gaps[@]}")" "$(median "${silences[@]}")" "$goal"
