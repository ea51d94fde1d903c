#!/bin/bash
# make package: puts the static release builds of parley-relay and parley, the systemd unit, the configuration (a
# conffile), the docs and the samples into .build/dist/parley_VERSION_ARCH.deb with dpkg-deb. Depends: names the Debian
# packages of the shared libraries the two programs link (their NEEDED entries, found with dpkg -S), adduser and procps.
set -euo pipefail
cd "$(dirname "$0")/../.."
bin=${BIN:-.build/static/release}
version=$(sed -n 's/.*static let string = "\(.*\)".*/\1/p' Sources/ParleyWire/ParleyVersion.swift)
arch=$(dpkg --print-architecture)
[ -n "$version" ] || { echo "build-deb: no version in Sources/ParleyWire/ParleyVersion.swift" >&2; exit 1; }
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT

install -D -m 0755 "$bin/parley-relay" "$root/usr/bin/parley-relay"
install -D -m 0755 "$bin/parley" "$root/usr/bin/parley"
strip --strip-unneeded "$root/usr/bin/parley-relay" "$root/usr/bin/parley"
install -D -m 0644 Samples/debian/parley-relay.service "$root/lib/systemd/system/parley-relay.service"
install -D -m 0644 Samples/debian/relay.json "$root/etc/parley/relay.json"
install -d -m 0755 "$root/usr/share/parley/web" "$root/usr/share/doc/parley/docs" "$root/usr/share/doc/parley/examples"
cp -r Samples/web/. "$root/usr/share/parley/web/"
install -m 0644 README.md "$root/usr/share/doc/parley/"
install -m 0644 docs/*.md "$root/usr/share/doc/parley/docs/"
install -m 0644 Samples/parley-relay.json Samples/monitoring/* "$root/usr/share/doc/parley/examples/"
cat > "$root/usr/share/doc/parley/copyright" <<COPYRIGHT
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: parley
Files: *
Copyright: the Parley authors
License: see the project's repository
COPYRIGHT

# Depends: the package of each library the programs name as NEEDED (not the ones those pull in: their own packages
# depend on them). A library no Debian package holds (a toolchain's, say) is an error: the package would not run.
# procps: the unit's ExecReload is /bin/kill -HUP.
depends=(adduser procps)
for lib in $(objdump -p "$root/usr/bin/parley-relay" "$root/usr/bin/parley" | awk '/NEEDED/ {print $2}' | sort -u); do
    case "$lib" in ld-linux*) depends+=(libc6); continue ;; esac  # the dynamic loader, libc6's
    path=$(ldd "$root/usr/bin/parley-relay" "$root/usr/bin/parley" | awk -v l="$lib" '$1 == l {print $3; exit}')
    [ -n "$path" ] || { echo "build-deb: $lib is not found by ldd" >&2; exit 1; }
    package=$(dpkg -S "$path" 2>/dev/null || dpkg -S "$(readlink -f "$path")" 2>/dev/null || dpkg -S "/usr$path" 2>/dev/null || true)
    package=${package%%:*}
    [ -n "$package" ] || { echo "build-deb: no Debian package holds $lib ($path)" >&2; exit 1; }
    depends+=("$package")
done
depends_line=$(printf '%s\n' "${depends[@]}" | sort -u | paste -sd, | sed 's/,/, /g')
size=$(du -sk "$root" | cut -f1)

install -d -m 0755 "$root/DEBIAN"
install -m 0755 Samples/debian/postinst Samples/debian/prerm Samples/debian/postrm "$root/DEBIAN/"
echo /etc/parley/relay.json > "$root/DEBIAN/conffiles"
cat > "$root/DEBIAN/control" <<CONTROL
Package: parley
Version: $version
Architecture: $arch
Maintainer: Parley <parley@localhost>
Section: net
Priority: optional
Installed-Size: $size
Depends: $depends_line
Description: real-time audio-room media relay and client
 parley-relay forwards and mixes voice for rooms of browsers (WebRTC), phone apps
 and Linux machines, with signed tokens, encrypted media, calls, texts and
 recordings; parley is its command-line client. The package runs the relay as
 the systemd service parley-relay (reload with systemctl reload).
CONTROL
mkdir -p .build/dist
deb=".build/dist/parley_${version}_${arch}.deb"
dpkg-deb --root-owner-group -Zxz --build "$root" "$deb" >/dev/null
echo "$deb"
echo "Depends: $depends_line"
