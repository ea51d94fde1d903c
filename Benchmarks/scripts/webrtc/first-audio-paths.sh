#!/bin/bash
# Browser join to first audio over each path a browser may take to a relay behind a 1:1 NAT: UDP to its host
# candidate, ICE-TCP to its TCP port (the client's namespace drops UDP), and TURN through Debian's coturn
# (iceTransportPolicy "relay"). Network namespaces as ReachabilityProcessTests builds them: the relay on 10.77.0.2,
# public 198.51.100.10 (nftables DNAT/SNAT in a router namespace, which also runs coturn on 198.51.100.10:3478), the
# browser on 198.51.100.20. A parley join on the relay's host speaks a tone throughout; headless Chromium opens the
# sample page in listen mode, which notes when the first RTP packet arrived (getStats every 10 ms from the moment it
# started to join: ICE servers fetched, offer posted and answered, checks, DTLS, first packet). Prints each run and,
# per path, the median, min and max. Root; leaves no namespace behind.
#
#   make release && Benchmarks/scripts/webrtc/first-audio-paths.sh [RUNS]   (chromium, coturn, nftables: make test)
set -euo pipefail
RUNS=${1:-5}
BIN=$(realpath "${BIN:-.build/release}")
WEB=$(realpath Samples/web)
P=fa$$
work=$(mktemp -d)
cleanup() {
  kill $(jobs -p) 2>/dev/null || true
  for ns in relay nat client; do ip netns pids $P-$ns 2>/dev/null | xargs -r kill 2>/dev/null || true; done
  sleep 0.3
  for ns in relay nat client; do ip netns delete $P-$ns 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

for ns in relay nat client; do
  ip netns add $P-$ns
  ip -n $P-$ns link set lo up
done
ip link add ${P}r0 netns $P-relay type veth peer name ${P}n0 netns $P-nat
ip link add ${P}c0 netns $P-client type veth peer name ${P}n1 netns $P-nat
ip -n $P-relay addr add 10.77.0.2/24 dev ${P}r0 && ip -n $P-relay link set ${P}r0 up
ip -n $P-nat addr add 10.77.0.1/24 dev ${P}n0 && ip -n $P-nat link set ${P}n0 up
ip -n $P-nat addr add 198.51.100.10/24 dev ${P}n1 && ip -n $P-nat link set ${P}n1 up
ip -n $P-client addr add 198.51.100.20/24 dev ${P}c0 && ip -n $P-client link set ${P}c0 up
ip -n $P-relay route add default via 10.77.0.1
ip netns exec $P-nat sysctl -qw net.ipv4.ip_forward=1
# Everything for the public address goes to the relay but TURN (3478), which the router answers itself; coturn's
# relayed packets to the public address (made on the router: the output hook) go to the relay too.
cat > "$work/nat.nft" <<EOF
table ip nat {
  chain pre { type nat hook prerouting priority dstnat; ip daddr 198.51.100.10 th dport != 3478 dnat to 10.77.0.2; }
  chain out { type nat hook output priority -100; ip daddr 198.51.100.10 th dport != 3478 dnat to 10.77.0.2; }
  chain post { type nat hook postrouting priority srcnat; ip saddr 10.77.0.2 snat to 198.51.100.10; }
}
EOF
ip netns exec $P-nat nft -f "$work/nat.nft"

secret=$(head -c 24 /dev/urandom | base64 | tr -d '/+=')
echo "$secret" > "$work/turn-secret"
cat > "$work/turnserver.conf" <<EOF
use-auth-secret
static-auth-secret=$secret
realm=parley
EOF
ip netns exec $P-nat turnserver -c "$work/turnserver.conf" --listening-ip 198.51.100.10 --relay-ip 10.77.0.1 \
  --listening-port 3478 --no-tls --no-dtls --no-cli --userdb "$work/turndb" --pidfile "$work/turn.pid" \
  --log-file stdout --simple-log > "$work/turn.log" 2>&1 &

ip netns exec $P-relay env PARLEY_TURN_SECRET_FILE="$work/turn-secret" $BIN/parley-relay --udp 0.0.0.0:7400 \
  --http 0.0.0.0:7480 --workers 1 --dev --state-dir "$work/state" --web-root "$WEB" --announce 198.51.100.10 \
  --turn 'turn:198.51.100.10:3478?transport=udp' > "$work/relay.log" 2>&1 &
for _ in $(seq 50); do grep -q "ready on udp" "$work/relay.log" && break; sleep 0.1; done
grep -q "ready on udp" "$work/relay.log" || { cat "$work/relay.log"; exit 1; }
ip netns exec $P-relay $BIN/parley join bench --identity tone --server 127.0.0.1:7400 --tone 440 --no-playback --no-tui \
  --duration $((RUNS * 3 * 10 + 30)) > "$work/tone.log" 2>&1 &
sleep 1

run() {  # path, run number, extra query
  local token ms
  token=$($BIN/parley token --identity "web-$1-$2" --room bench)
  ms=$(timeout 30 ip netns exec $P-client chromium --headless=new --no-sandbox --autoplay-policy=no-user-gesture-required \
      --no-first-run --user-data-dir="$work/profile-$1-$2" --enable-logging=stderr --v=0 \
      --unsafely-treat-insecure-origin-as-secure=http://198.51.100.10:7480 \
      "http://198.51.100.10:7480/?room=bench&token=$token&join=1&listen=1&report=1$3" 2>&1 \
    | grep -a "PARLEY RESULT" | grep -oE '"firstPacketMs":[0-9]+' | cut -d: -f2 || true)
  echo "$1 run $2: join to first audio ${ms:-none} ms" >&2
  echo "${ms:-}"
}
summary() {  # path, values...
  local path=$1; shift
  printf '%s\n' "$@" | grep -E '^[0-9]+$' | sort -n | awk -v p="$path" -v n="$RUNS" '{a[NR]=$1}
    END {if (NR) printf "%-8s join to first audio, %d of %d runs: median %d ms, min %d, max %d\n", p, NR, n, a[int((NR+1)/2)], a[1], a[NR];
         else printf "%-8s no run reached first audio\n", p}'
}

udp=(); turn=(); tcp=()
for i in $(seq "$RUNS"); do udp+=("$(run udp "$i" "")"); done
for i in $(seq "$RUNS"); do turn+=("$(run turn "$i" "&relay=1")"); done
ip netns exec $P-client nft 'add table inet fw; add chain inet fw out { type filter hook output priority 0; }; add rule inet fw out meta l4proto udp drop'
for i in $(seq "$RUNS"); do tcp+=("$(run ice-tcp "$i" "")"); done
summary udp "${udp[@]}"
summary ice-tcp "${tcp[@]}"
summary turn "${turn[@]}"
