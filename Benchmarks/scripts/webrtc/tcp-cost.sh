#!/bin/bash
# What the relay's TCP port costs per forwarded packet against UDP: one relay (one worker, loopback), one parley join
# speaking a tone and LISTENERS listen-only joins in one forward room, all over UDP, then all over TCP (--tcp: each
# client's datagrams through the relay's TCP bridge). Over the middle SECONDS of each run it reads the relay process's
# CPU time (/proc/PID/stat, every thread: workers, the TCP bridge, the HTTP API) and parley_packets_forwarded_total
# (/metrics), and prints µs of relay CPU per forwarded packet for each transport and the difference. RUNS rounds,
# UDP and TCP alternating; each run's figures, then the median and spread. The clients decode what they hear (the
# machine's other core): at small counts they, not the relay, are the load.
#
#   make release && Benchmarks/scripts/webrtc/tcp-cost.sh [RUNS] [LISTENERS] [SECONDS]
set -euo pipefail
RUNS=${1:-3}
LISTENERS=${2:-16}
SECONDS_MEASURED=${3:-10}
BIN=${BIN:-.build/release}
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$work"' EXIT
tick=$(getconf CLK_TCK)

cpu() { awk -v t="$tick" '{ printf "%.6f", ($14 + $15) / t }' "/proc/$1/stat"; }
forwarded() { curl -s "http://$1/metrics" | awk '/^parley_packets_forwarded_total/ { print $2 }'; }

one() {  # transport (udp|tcp) → "µs per forwarded packet"
  local flag=""; [ "$1" = tcp ] && flag="--tcp"
  # Every client is on 127.0.0.1: the TCP port's per-address limit (8) would refuse most of them.
  PARLEY_STATE_DIR=$work/state PARLEY_TCP_CONNECTIONS_PER_ADDRESS=1000 $BIN/parley-relay --udp 127.0.0.1:0 --http 127.0.0.1:0 --workers 1 > "$work/relay.log" 2>&1 &
  local relay=$!
  for _ in $(seq 50); do grep -q "ready on udp" "$work/relay.log" && break; sleep 0.1; done
  local line udp http
  line=$(grep "ready on udp" "$work/relay.log")
  udp=$(echo "$line" | grep -oE "udp 127.0.0.1:[0-9]+" | cut -d' ' -f2)
  http=$(echo "$line" | grep -oE "http 127.0.0.1:[0-9]+" | cut -d' ' -f2)
  local duration=$((SECONDS_MEASURED + 8)) pids=()
  $BIN/parley join cost --identity speaker --server "$udp" $flag --tone 440 --no-playback --no-tui --duration $duration \
    > "$work/speaker.log" 2>&1 & pids+=($!)
  for i in $(seq "$LISTENERS"); do
    $BIN/parley join cost --identity "l$i" --server "$udp" $flag --listen-only --no-playback --no-tui --duration $duration \
      > "$work/l$i.log" 2>&1 & pids+=($!)
  done
  sleep 4  # joined, and TCP clients past their move
  local c0 f0 c1 f1
  c0=$(cpu $relay); f0=$(forwarded "$http")
  sleep "$SECONDS_MEASURED"
  c1=$(cpu $relay); f1=$(forwarded "$http")
  kill "${pids[@]}" 2>/dev/null || true
  wait "${pids[@]}" 2>/dev/null || true
  kill $relay; wait $relay 2>/dev/null || true
  awk -v c0="$c0" -v c1="$c1" -v f0="$f0" -v f1="$f1" 'BEGIN {
    if (f1 - f0 <= 0) { print "none"; exit }
    printf "%.2f %d\n", (c1 - c0) * 1e6 / (f1 - f0), f1 - f0 }'
}

udp=(); tcp=()
for r in $(seq "$RUNS"); do
  read -r u un <<< "$(one udp)"; echo "run $r udp: $u µs of relay CPU per forwarded packet ($un packets)"
  read -r t tn <<< "$(one tcp)"; echo "run $r tcp: $t µs of relay CPU per forwarded packet ($tn packets)"
  udp+=("$u"); tcp+=("$t")
done
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {printf "median %.2f (%.2f–%.2f)", a[int((NR+1)/2)], a[1], a[NR]}'; }
echo "udp: $(median "${udp[@]}") µs per forwarded packet"
echo "tcp: $(median "${tcp[@]}") µs per forwarded packet"
paste <(printf '%s\n' "${udp[@]}") <(printf '%s\n' "${tcp[@]}") | awk '{print $2 - $1}' | sort -g \
  | awk '{d[NR]=$1} END {printf "tcp − udp: median %.2f µs per forwarded packet (%.2f–%.2f over %d rounds)\n", d[int((NR+1)/2)], d[1], d[NR], NR}'
