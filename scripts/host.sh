#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# Two emulated gateway hosts, A and B, under QEMU's full emulation (TCG):
# q35 with an Intel IOMMU (interrupt remapping on), hugepages, and two PCI
# NICs each (virtio-net-pci behind the IOMMU, multi-queue, RSS, MTU 9000)
# joined by two independent wires, A's NIC i to B's NIC i: host taps whose
# ingress tc redirects to the other tap (a Linux bridge would drop LACP).
# Each guest runs this machine's root read-only over 9p with a tmpfs above
# it, so the project's own build is what runs there. See usage().
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
ROOT=$(gw_root)

STATE=${GW_HOST_STATE:-/run/gridwire-host}
QUEUES=${GW_HOST_QUEUES:-7}  # queue pairs per NIC: gridwired's main, 2 workers, 2 receivers, 2 urgent
# rss=on is QEMU's own RSS in software (Debian's QEMU 7.2 cannot load its
# eBPF RSS with libbpf 1.x): a queue whose packets it moves to a full queue
# stalls for good, so under overload use rss=off, where the tap's flow hash
# picks the queue (doc/operations.md, "On a gateway host").
RSS=${GW_HOST_RSS:-on}
# The data NICs' model: virtio (the default, the one with RSS and MTU 9000
# in DPDK 22.11), or e1000e or vmxnet3, to see what their PMDs offer.
NIC=${GW_HOST_NIC:-virtio}
SMP=${GW_HOST_SMP:-2}
MEM=${GW_HOST_MEM:-4096}     # MB per guest: a 1 GB page needs 4 (with 3, q35 leaves no free aligned GB)
HUGE2M=${GW_HOST_HUGE:-512}  # 2 MB pages reserved on the guest's command line
PORT_BASE=${GW_HOST_PORT:-47700}
GUESTS=(A B)

usage() {
    cat <<EOF
usage: ${0##*/} COMMAND [ARGS]

  up [--systemd A|B] [--no-iommu A|B]
                     build the initramfs (once), make the two wires, boot A and
                     B, wait until both answer (about a minute under TCG)
  reboot A|B [--systemd] [--no-iommu]
                     power one guest off and boot it again, as asked
  down               power both off, remove the wires; never fails
  status             each guest: running or not, its NICs; the wires
  shell A|B          an interactive shell in the guest
  run A|B [CMD...]   run CMD (or the bash script on stdin) in the guest, in
                     this tree, with its output; exit with its status
  link A|B|both 0|1 on|off
                     QEMU's set_link on a NIC, or on both ends of wire 0 or 1
                     (a cable pulled): the guest's PMD sees its link go down
                     or come up
  console A|B        the guest's serial console (a shell on it in the guest;
                     Ctrl-] leaves); what it printed is in $STATE/NAME/console.log

In a guest: NICs 0000:00:04.0 and 0000:00:05.0 are the data NICs (wire 0
and 1), 0000:00:03.0 the management NIC (the guest's own network, which
nothing may bind); /gw is shared with $STATE/NAME/share on this machine.
environment: GW_HOST_QUEUES ($QUEUES), GW_HOST_RSS ($RSS), GW_HOST_NIC ($NIC), GW_HOST_SMP ($SMP), GW_HOST_MEM ($MEM MB),
             GW_HOST_HUGE ($HUGE2M 2 MB pages), GW_HOST_STATE, GW_HOST_PORT ($PORT_BASE),
             GW_HOST_RUN_TIMEOUT (900 s: the longest a run may take)
EOF
}

die() { echo "host: $*" >&2; exit 1; }
need_root() { [[ $EUID -eq 0 ]] || die "must run as root (taps, QEMU)"; }

gi() { # A|B -> 0|1
    case ${1:-} in
    A | a) echo 0 ;;
    B | b) echo 1 ;;
    *) die "no emulated host '${1:-}': A or B" ;;
    esac
}

kernel() { # the newest Debian kernel with its modules
    local k v
    for k in $(ls -1v /boot/vmlinuz-*-amd64 2>/dev/null | tac); do
        v=${k#/boot/vmlinuz-}
        [[ -d /lib/modules/$v ]] && { echo "$v"; return 0; }
    done
    die "no kernel to boot: apt-get install linux-image-amd64 (./scripts/gw deps does)"
}

# The initramfs: static busybox, scripts/host/init, the modules that reach
# the root over 9p and the overlay, in the order modprobe would load them.
initramfs() {
    local v=$1 out=$STATE/initramfs-$1.cpio.gz dir m
    [[ -s $out && $out -nt $ROOT/scripts/host/init ]] && { echo "$out"; return 0; }
    [[ -x /bin/busybox ]] || die "no busybox: apt-get install busybox-static"
    dir=$(mktemp -d)
    mkdir -p "$dir"/{bin,modules,proc,sys,dev}
    cp /bin/busybox "$dir/bin/busybox"
    cp "$ROOT/scripts/host/init" "$dir/init"
    : >"$dir/modules.order"
    for m in virtio_pci 9pnet_virtio 9p overlay; do
        modprobe -S "$v" --show-depends "$m" | awk '$1 == "insmod" {print $2}'
    done | awk '!seen[$0]++' | while read -r m; do
        cp "$m" "$dir/modules/"
        basename "$m" .ko >>"$dir/modules.order"
    done
    (cd "$dir" && find . | cpio -o -H newc --quiet | gzip -1) >"$out.tmp"
    mv "$out.tmp" "$out"
    rm -rf "$dir"
    echo "$out"
}

tap() { echo "gwh${GUESTS[$1]}$2"; }
mac() { printf '52:54:00:%02x:00:%02x' "$((0xa0 + $1))" "$2"; }

wires_up() {
    local n g t
    for n in 0 1; do
        for g in 0 1; do
            t=$(tap "$g" "$n")
            ip link del "$t" 2>/dev/null || true
            ip tuntap add "$t" mode tap $([[ $NIC == virtio ]] && echo multi_queue)
            ip link set "$t" mtu 9000 up
        done
        # Each tap's ingress (what its guest sent) leaves by the other tap
        # (to the other guest): a wire with nothing in between.
        for g in 0 1; do
            t=$(tap "$g" "$n")
            tc qdisc add dev "$t" ingress
            tc filter add dev "$t" parent ffff: protocol all u32 match u32 0 0 \
                action mirred egress redirect dev "$(tap $((1 - g)) "$n")"
        done
    done
}

wires_down() {
    local n g
    for n in 0 1; do for g in 0 1; do ip link del "$(tap "$g" "$n")" 2>/dev/null || true; done; done
}

qpid() { # a running guest's QEMU pid, or nothing
    local f=$STATE/${GUESTS[$1]}/qemu.pid p
    [[ -s $f ]] || return 0
    p=$(cat "$f")
    kill -0 "$p" 2>/dev/null && [[ $(cat "/proc/$p/comm" 2>/dev/null) == qemu-system-* ]] && echo "$p"
    return 0
}

boot() { # index, kernel version, initramfs, init (agent|systemd), iommu (1|0)
    local g=$1 v=$2 rd=$3 init=$4 iommu=$5 name=${GUESTS[$1]} d n dev append huge
    d=$STATE/$name
    rm -rf "$d"
    mkdir -p "$d/share"
    huge="hugepagesz=2M hugepages=$HUGE2M"
    # 1 GB pages too, where the emulated CPU offers them (-cpu max does).
    grep -qw pdpe1gb /proc/cpuinfo && huge="default_hugepagesz=2M $huge hugepagesz=1G hugepages=1"
    append="console=ttyS0 panic=-1 rdinit=/init gw.init=$init gw.root=$ROOT gw.name=$name $huge"
    local iommu_dev=() nicopt=""
    if ((iommu)); then
        append+=" intel_iommu=on iommu=pt"
        iommu_dev=(-device intel-iommu,intremap=on,aw-bits=48)
        nicopt=",iommu_platform=on,disable-legacy=on"
    fi
    # The management NIC (guest.sh finds it by its MAC, 52:54:00:99:00:xx):
    # QEMU's user network, with the guest's command ports forwarded here.
    dev=(-netdev "user,id=mgmt,hostfwd=tcp:127.0.0.1:$(port_of "$g")-:5000,hostfwd=tcp:127.0.0.1:$(port_of "$g" 1)-:5001"
        -device "virtio-net-pci,netdev=mgmt,mac=52:54:00:99:00:0$g,addr=0x3")
    local nic q=$QUEUES
    for n in 0 1; do
        case $NIC in
        virtio) nic="virtio-net-pci,mq=on,vectors=$((2 * QUEUES + 2)),rss=$RSS,rx_queue_size=1024,host_mtu=9000$nicopt" ;;
        e1000e | vmxnet3) nic=$NIC q=1 ;; # their QEMU models take one tap queue
        *) die "GW_HOST_NIC=$NIC: virtio, e1000e or vmxnet3" ;;
        esac
        dev+=(-netdev "tap,id=nic$n,ifname=$(tap "$g" "$n"),script=no,downscript=no,vhost=off,queues=$q"
            -device "$nic,netdev=nic$n,mac=$(mac "$g" "$n"),addr=0x$((4 + n))")
    done
    qemu-system-x86_64 -name "gw-$name" -accel tcg -machine q35 -cpu max -smp "$SMP" -m "$MEM" \
        "${iommu_dev[@]}" -kernel "/boot/vmlinuz-$v" -initrd "$rd" -append "$append" \
        -fsdev "local,id=fsroot,path=/,security_model=none,readonly=on,multidevs=remap" \
        -device "virtio-9p-pci,fsdev=fsroot,mount_tag=root,addr=0x6" \
        -fsdev "local,id=fsshare,path=$d/share,security_model=none,multidevs=remap" \
        -device "virtio-9p-pci,fsdev=fsshare,mount_tag=gwhost,addr=0x7" \
        "${dev[@]}" -display none \
        -chardev "socket,id=con,path=$d/console.sock,server=on,wait=off,logfile=$d/console.log" \
        -serial chardev:con \
        -monitor "unix:$d/monitor.sock,server=on,wait=off" -no-reboot \
        -pidfile "$d/qemu.pid" -daemonize >"$d/qemu.log" 2>&1 ||
        { cat "$d/qemu.log" >&2; die "QEMU did not start guest $name"; }
}

port_of() { echo $((PORT_BASE + 2 * $1 + ${2:-0})); }

# run_in INDEX: the script on stdin, in the guest; its output; its status.
run_in() {
    local g=$1 rc=0
    [[ -n $(qpid "$g") ]] || die "guest ${GUESTS[$g]} is not running (./scripts/gw host up)"
    # A guest that lost its management network would leave us waiting.
    timeout -k 5 "${GW_HOST_RUN_TIMEOUT:-900}" socat -t 86400 - "TCP:127.0.0.1:$(port_of "$g")" \
        2>/dev/null | rc_of || rc=$?
    return "$rc"
}

rc_of() { # guest.sh run's output on stdin: print it, exit with its status
    local line rc=255
    while IFS= read -r line || [[ -n $line ]]; do
        if [[ $line == $'\001'gw-rc=* ]]; then rc=${line#*=}; else printf '%s\n' "$line"; fi
    done
    return "$rc"
}

wait_up() { # index, seconds
    local g=$1 t0=$SECONDS
    while ((SECONDS - t0 < $2)); do
        [[ -n $(qpid "$g") ]] || { tail -n 20 "$STATE/${GUESTS[$g]}/console.log" >&2; die "guest ${GUESTS[$g]} died while booting"; }
        [[ $(echo 'echo up' | run_in "$g" 2>/dev/null) == up ]] && return 0
        sleep 1
    done
    tail -n 20 "$STATE/${GUESTS[$g]}/console.log" >&2
    die "guest ${GUESTS[$g]} did not answer in $2 s"
}

monitor() { # index, HMP command
    printf '%s\n' "$2" | socat -t 2 - "UNIX-CONNECT:$STATE/${GUESTS[$1]}/monitor.sock" >/dev/null
}

# boot_opts INDEX OPTS...: the init and IOMMU of guest INDEX from
# --systemd NAME and --no-iommu NAME options, as "init iommu".
boot_opts() {
    local g=$1 init=agent iommu=1
    shift
    while (($#)); do
        (($# >= 2)) || die "$1 needs a guest: $1 A|B"
        case $1 in
        --systemd) [[ $(gi "$2") == "$g" ]] && init=systemd ;;
        --no-iommu) [[ $(gi "$2") == "$g" ]] && iommu=0 ;;
        *) die "unknown option $1 (--systemd A|B, --no-iommu A|B)" ;;
        esac
        shift 2
    done
    echo "$init $iommu"
}

cmd_up() {
    need_root
    local g v rd t0=$SECONDS opts
    command -v qemu-system-x86_64 >/dev/null || die "no QEMU: apt-get install qemu-system-x86 (./scripts/gw deps does)"
    boot_opts 0 "$@" >/dev/null || exit 1
    cmd_down >/dev/null 2>&1
    mkdir -p "$STATE"
    v=$(kernel)
    rd=$(initramfs "$v")
    wires_up
    for g in 0 1; do
        opts=$(boot_opts "$g" "$@")
        # shellcheck disable=SC2086  # "init iommu": two words
        boot "$g" "$v" "$rd" $opts
    done
    for g in 0 1; do wait_up "$g" 300; done
    echo "host: A and B up in $((SECONDS - t0)) s (kernel $v)"
}

stop() { # index: power the guest off
    local g=$1 p
    p=$(qpid "$g")
    [[ -n $p ]] || return 0
    monitor "$g" quit 2>/dev/null || true
    for _ in $(seq 50); do gw_alive "$p" || return 0; sleep 0.1; done
    kill -9 "$p" 2>/dev/null || true
}

cmd_reboot() { # NAME [--systemd] [--no-iommu]: that guest alone, again
    need_root
    local g t0=$SECONDS v
    g=$(gi "${1:-}")
    shift
    [[ -n $(qpid $((1 - g))) || -n $(qpid "$g") ]] || die "the hosts are not up (./scripts/gw host up)"
    local init=agent iommu=1
    while (($#)); do
        case $1 in
        --systemd) init=systemd ;;
        --no-iommu) iommu=0 ;;
        *) die "reboot: unknown option $1 (--systemd, --no-iommu)" ;;
        esac
        shift
    done
    stop "$g"
    v=$(kernel)
    boot "$g" "$v" "$(initramfs "$v")" "$init" "$iommu"
    wait_up "$g" 300
    echo "host: ${GUESTS[$g]} up again in $((SECONDS - t0)) s"
}

cmd_down() {
    stop 0
    stop 1
    wires_down
    return 0
}

cmd_status() {
    local g p rc=0
    for g in 0 1; do
        p=$(qpid "$g")
        if [[ -z $p ]]; then
            echo "${GUESTS[$g]}: not running"
            rc=1
            continue
        fi
        echo "${GUESTS[$g]}: running (QEMU pid $p)"
        echo 'for d in 0000:00:03.0 0000:00:04.0 0000:00:05.0; do
                  drv=$(basename "$(readlink /sys/bus/pci/devices/$d/driver)" 2>/dev/null)
                  echo "  $d ${drv:-no driver} iommu_group=$(basename "$(readlink /sys/bus/pci/devices/$d/iommu_group)" 2>/dev/null)"
              done' | run_in "$g" || echo "  (not answering)"
    done
    ip -br link show | grep '^gwh' || echo "no wires"
    return "$rc"
}

cmd_run() {
    local g
    g=$(gi "${1:-}")
    shift
    if (($#)); then printf '%s\n' "$*" | run_in "$g"; else run_in "$g"; fi
}

main() {
    local cmd=${1:-}
    (($#)) && shift
    case $cmd in
    up) cmd_up "$@" ;;
    reboot) cmd_reboot "$@" ;;
    down) cmd_down ;;
    status) cmd_status ;;
    run) cmd_run "$@" ;;
    shell)
        local g
        g=$(gi "${1:-}")
        [[ -n $(qpid "$g") ]] || die "guest ${GUESTS[$g]} is not running"
        exec socat -,raw,echo=0,escape=0x1d "TCP:127.0.0.1:$(port_of "$g" 1)"
        ;;
    link)
        [[ ${2:-} == [01] && ${3:-} == @(on|off) ]] || die "usage: link A|B|both 0|1 on|off"
        if [[ ${1:-} == both ]]; then
            monitor 0 "set_link nic$2 $3"
            monitor 1 "set_link nic$2 $3"
        else
            monitor "$(gi "${1:-}")" "set_link nic$2 $3"
        fi
        ;;
    console)
        local g
        g=$(gi "${1:-}")
        [[ -n $(qpid "$g") ]] || die "guest ${GUESTS[$g]} is not running"
        exec socat -,raw,echo=0,escape=0x1d "UNIX-CONNECT:$STATE/${GUESTS[$g]}/console.sock"
        ;;
    -h | --help | help | "") usage ;;
    *) die "unknown command '$cmd' (up reboot down status shell run link console)" ;;
    esac
}

main "$@"
