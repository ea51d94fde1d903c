#!/bin/sh
# Runs parley-relay on a state directory that fills up: a 4 MiB tmpfs mounted in a mount namespace of the relay's own
# (start it with `unshare -m --propagation private`; the mount goes away with the relay), then filled to the last byte
# by `dd`. Used by FullDiskProcessTests.
#   full-disk-relay.sh STATE_DIR RELAY_BINARY WHEN
#   WHEN: start — once the relay has opened its message store; track — 2 s after a recording's first track appears;
#   never — not filled here (the test fills it through the relay itself).
# Prints "state disk full" on standard output once it is. The relay takes its other settings from PARLEY_* variables.
set -e
state=$1 relay=$2 when=$3
mount -t tmpfs -o size=4m,mode=0700 tmpfs "$state"
[ "$when" = never ] || (
    if [ "$when" = track ]; then
        until ls "$state"/recordings/*/t*.opus >/dev/null 2>&1; do sleep 0.1; done
        sleep 2
    else
        until [ -e "$state/messages.db" ]; do sleep 0.1; done
        sleep 0.5
    fi
    dd if=/dev/zero of="$state/filler" bs=4k 2>/dev/null || true
    echo "state disk full"
) &
exec "$relay" --udp 127.0.0.1:0 --http 127.0.0.1:0 --workers 1 --log-level info --state-dir "$state"
