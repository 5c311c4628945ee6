#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# Inside an emulated host (scripts/host.sh): bring the guest up and serve
# the commands this machine sends it.
#
#   guest.sh init      as PID 1 (the initramfs's gw.init=agent): mount what
#                      a system has, set up, serve, reap orphans forever
#   guest.sh systemd   from gw-guest.service (gw.init=systemd): set up, serve
#   guest.sh run       one command: a bash script on stdin, its output and
#                      then a last line "\001gw-rc=N" on stdout
#
# The guest's network is its management NIC (MAC 52:54:00:99:00:xx), on
# QEMU's user network: 10.0.2.15/24, default route via 10.0.2.2. Port 5000
# runs scripts (guest.sh run), port 5001 is a shell on a pty; this
# machine reaches them through QEMU's forwarded ports. The data NICs are
# left to the kernel's virtio_net, as on a host that has just booted:
# gridwire-setup binds them to vfio-pci.
set -u
ROOT=$(cd "$(dirname "$(readlink -f "$0")")/../.." && pwd -P)
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root
export GW_GUEST=1

cmdline() { # KEY: the value of gw.KEY= on the kernel command line
    local a
    for a in $(cat /proc/cmdline); do
        [[ $a == "gw.$1="* ]] && { echo "${a#*=}"; return; }
    done
}

mounts() {
    mount -t proc proc /proc
    mount -t sysfs sys /sys
    mkdir -p /dev/pts /dev/shm
    mount -t devpts -o gid=5,mode=620,ptmxmode=666 devpts /dev/pts
    mount -t tmpfs tmpfs /dev/shm
    mount -t tmpfs -o mode=0755 tmpfs /run
    # A tree under /tmp (a clone made there) stays in sight under the
    # guest's own /tmp.
    if [[ $ROOT == /tmp/* ]]; then
        mkdir -p /.gw-tree
        mount --bind "$ROOT" /.gw-tree
    fi
    mount -t tmpfs tmpfs /tmp
    if [[ $ROOT == /tmp/* ]]; then
        mkdir -p "$ROOT"
        mount --bind /.gw-tree "$ROOT"
    fi
}

setup() {
    local name
    name=$(cmdline name)
    hostname "host-${name,,}"
    mkdir -p /gw /dev/hugepages /dev/hugepages1G /run/gridwire
    # What this machine and the guest share: logs and results (writable).
    mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000 gwhost /gw
    mountpoint -q /dev/hugepages || mount -t hugetlbfs -o pagesize=2M nodev /dev/hugepages
    [[ -d /sys/kernel/mm/hugepages/hugepages-1048576kB ]] &&
        mount -t hugetlbfs -o pagesize=1G nodev /dev/hugepages1G
    modprobe virtio_net
    ip link set lo up
    local dev mgmt=""
    for dev in /sys/class/net/*; do
        [[ $(cat "$dev/address") == 52:54:00:99:00:* ]] && mgmt=${dev##*/}
    done
    [[ -n $mgmt ]] || { echo "guest: no management NIC" >/dev/console; return 1; }
    ip addr add 10.0.2.15/24 dev "$mgmt"
    ip link set "$mgmt" up
    ip route add default via 10.0.2.2
    echo "guest: host ${name} up, management on $mgmt" >/dev/console
}

serve() {
    socat TCP-LISTEN:5001,reuseaddr,fork \
        EXEC:"/bin/bash -li",pty,stderr,setsid,sigint,sane,ctty </dev/null >/dev/null 2>&1 &
    cd "$ROOT" || return 1
    # -t: after the script (our end of the input), wait for all its output.
    exec socat -t 86400 TCP-LISTEN:5000,reuseaddr,fork EXEC:"/bin/bash $ROOT/scripts/host/guest.sh run" \
        </dev/null
}

run() {
    local script rc stamp
    script=$(mktemp /tmp/gw-run.XXXXXX)
    cat >"$script"
    # A rebuild on this machine rewrites the binaries in place, and the
    # guest's page cache would keep their old pages (a crash at start):
    # once the build has changed, forget what was cached.
    stamp=$(stat -c %Y "$ROOT/build/.ninja_log" 2>/dev/null || echo none)
    if [[ $stamp != "$(cat /run/gw-build-stamp 2>/dev/null)" ]]; then
        echo 1 >/proc/sys/vm/drop_caches
        echo "$stamp" >/run/gw-build-stamp
    fi
    cd "$ROOT" || exit 1
    bash "$script" </dev/null 2>&1
    rc=$?
    rm -f "$script"
    printf '\001gw-rc=%d\n' "$rc"
}

console() { # a shell on the serial console (./scripts/gw host console A)
    while :; do setsid bash -c 'exec bash -li </dev/ttyS0 >/dev/ttyS0 2>&1'; sleep 1; done
}

case ${1:-} in
init)
    mounts
    setup
    serve &
    console &
    # PID 1 adopts every orphan: reap them.
    while :; do wait; sleep 1; done
    ;;
systemd)
    console &
    setup && serve
    ;;
run) run ;;
*) echo "usage: guest.sh init|systemd|run" >&2; exit 2 ;;
esac
