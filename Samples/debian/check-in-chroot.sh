#!/bin/bash
# make package-check: installs the package `make package` built into a fresh Debian 12 (bookworm) made by debootstrap,
# as a new machine would get it (apt resolving its Depends from Debian), then checks there: `parley-relay --version`,
# the unit (systemd-analyze verify), the maintainer scripts' user and API key, and a join — the relay started as the
# unit starts it (its user, its config, its state directory), `parley join` with a token of the generated key, in a
# network namespace of its own. The chroot is kept in $CHROOT (default /var/tmp/parley-bookworm) for the next run;
# the namespace and mounts go at the end.
set -euo pipefail
deb=$(readlink -f "$1")
chroot_dir=${CHROOT:-/var/tmp/parley-bookworm}
mirror=${MIRROR:-http://deb.debian.org/debian}
ns=parley-pkg-$$
cleanup() {
    ip netns pids "$ns" 2>/dev/null | xargs -r kill 2>/dev/null || true
    ip netns del "$ns" 2>/dev/null || true
    umount "$chroot_dir/proc" 2>/dev/null || true
}
trap cleanup EXIT

if [ ! -x "$chroot_dir/usr/bin/apt-get" ]; then
    echo "debootstrap bookworm into $chroot_dir (once)"
    debootstrap --variant=minbase bookworm "$chroot_dir" "$mirror" >/dev/null
fi
mount -t proc proc "$chroot_dir/proc"
cp /etc/resolv.conf "$chroot_dir/etc/resolv.conf"
cp "$deb" "$chroot_dir/tmp/parley.deb"
in_chroot() {
    chroot "$chroot_dir" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root DEBIAN_FRONTEND=noninteractive "$@"
}
in_chroot apt-get -qq update
# A machine boots with systemd; a minbase chroot has none (the unit's targets, systemd-analyze's view of it).
in_chroot apt-get -y -qq install systemd >/dev/null
# A reinstall from scratch each run: the purge removes the user's key and state too.
in_chroot dpkg --purge parley >/dev/null 2>&1 || true
in_chroot apt-get -y -qq install /tmp/parley.deb >/dev/null
echo "installed: $(in_chroot dpkg-query -W -f='${Package} ${Version} ${Status}' parley)"

version=$(in_chroot parley-relay --version)
echo "parley-relay --version: $version"
in_chroot getent passwd parley-relay >/dev/null || { echo "FAIL: no parley-relay user"; exit 1; }
# Names as the chroot knows them (its users' ids need not be the host's).
keys=$(in_chroot stat -c '%a %U:%G' /etc/parley/api-keys.json)
[ "$keys" = "640 root:parley-relay" ] || { echo "FAIL: api-keys.json is $keys"; exit 1; }
echo "api-keys.json: $keys; conffiles: $(in_chroot dpkg-query -W -f='${Conffiles}' parley | xargs)"
systemd-analyze verify --root="$chroot_dir" /lib/systemd/system/parley-relay.service
echo "systemd-analyze verify: ok"
systemd-analyze security --offline=true --root="$chroot_dir" parley-relay.service 2>/dev/null | tail -1 || true

# The relay as the unit runs it, in a namespace with loopback only.
ip netns add "$ns"
ip -n "$ns" link set lo up
install -d -o "$(in_chroot id -u parley-relay)" -g "$(in_chroot id -g parley-relay)" -m 0700 "$chroot_dir/var/lib/parley-relay"
ip netns exec "$ns" chroot --userspec=parley-relay:parley-relay "$chroot_dir" \
    /usr/bin/parley-relay --config /etc/parley/relay.json --state-dir /var/lib/parley-relay \
    > "$chroot_dir/tmp/relay.out" 2> "$chroot_dir/tmp/relay.err" &
for _ in $(seq 50); do grep -q "ready on udp" "$chroot_dir/tmp/relay.out" && break; sleep 0.2; done
grep "ready on udp" "$chroot_dir/tmp/relay.out" || { echo "FAIL: the relay did not start"; cat "$chroot_dir/tmp/relay.err"; exit 1; }
key=$(sed -n 's/^{"\([^"]*\)": "\([^"]*\)"}$/\1/p' "$chroot_dir/etc/parley/api-keys.json")
secret=$(sed -n 's/^{"\([^"]*\)": "\([^"]*\)"}$/\2/p' "$chroot_dir/etc/parley/api-keys.json")
ip netns exec "$ns" chroot "$chroot_dir" env -i PARLEY_API_KEY="$key" PARLEY_API_SECRET="$secret" \
    /usr/bin/parley join package-room --identity installer --server 127.0.0.1:7400 --listen-only --no-playback \
    --no-tui --duration 2 > "$chroot_dir/tmp/join.out" 2>&1
grep "joined package-room" "$chroot_dir/tmp/join.out" || { echo "FAIL: no join"; cat "$chroot_dir/tmp/join.out"; exit 1; }
grep -q '"msg":"installer joined package-room' "$chroot_dir/tmp/relay.err" || { echo "FAIL: no JSON log line"; exit 1; }
echo "package check: passed"
