#!/usr/bin/env bash
# refs.sh OUT: the benchmark's reference rows, measured between the two
# namespaces (which must be up, with no gateway running), as one JSON
# object on stdout; logs in OUT/runs/.
#
#  testpmd        the veths' capacity: dpdk-testpmd txonly (multi-flow, so
#                 l34 hashing uses both members) in gwa, rxonly in gwb, each
#                 bonding veth[0-1] over af_packet, 9000-byte frames; the
#                 receive rate over the last seconds, also as 225-byte
#                 messages at gridwire's packing (16-byte record header
#                 each, 74 bytes of headers per frame). Bond mode 2 (l34),
#                 not 4: an rxonly testpmd never transmits, so LACP would
#                 never let data through; the data path is the same;
#  testpmd_cable  the cable's capacity: the same, over its two vhost-user
#                 <-> virtio-user links, unbonded (the bond over them needs
#                 mode 4, which rxonly cannot keep up, and net_vhost cannot
#                 take the MAC address modes 0 and 2 set): txonly on both
#                 vhost ports, rxonly on both virtio-user ports;
#  tcp_64k        TCP with 64 KB application buffering, one sender, one receiver;
#  zmq            ZeroMQ PUSH/PULL over TCP, one sender, one receiver
#                 (both app/gw-ref, over veth-a0/veth-b0 with kernel addresses).
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
ROOT=$(gw_root)
out=${1:?usage: refs.sh OUT}
mkdir -p "$out/runs"
SIZE=225 FRAME=9000 SECONDS_RUN=${GW_REF_SECONDS:-8} COUNT=${GW_REF_MSGS:-20000000}
CABLE=/run/gridwire/refcable

# testpmd NAME NS LCORES MODE PORTMASK VDEV...: interactive, commands from
# OUT/runs/fifo-NAME, output in OUT/runs/testpmd-NAME.log.
testpmd() {
    local name=$1 ns=$2 lcores=$3 mode=$4 mask=$5 vdevs=() v
    shift 5
    for v in "$@"; do vdevs+=(--vdev "$v"); done
    ip netns exec "$ns" dpdk-testpmd --no-pci --no-huge -m 1024 --no-shconf \
        --file-prefix "ref$name" --lcores="$lcores" "${vdevs[@]}" \
        -- -i --mbuf-size=10336 --total-num-mbufs=16384 --forward-mode="$mode" --txpkts=$FRAME \
        --txonly-multi-flow --portmask="$mask" --no-lsc-interrupt \
        <"$out/runs/fifo-$name" >"$out/runs/testpmd-$name.log" 2>&1 &
    gw_cleanup_push _gw_stop_pid $!
}

# capacity TX RX STATS-CMD [FIX-MTU]: start both, read RX's stats each second.
capacity() {
    local tx=$1 rx=$2 show=$3 fix=${4:-0}
    exec 7>"$out/runs/fifo-$tx" 8>"$out/runs/fifo-$rx"
    for _ in $(seq 300); do
        grep -q "testpmd>" "$out/runs/testpmd-$tx.log" && grep -q "testpmd>" "$out/runs/testpmd-$rx.log" && break
        sleep 0.1
    done
    # Starting an af_packet port resets the kernel MTU to 1500 (machine notes):
    # set it again before the first frame, or 9000-byte frames vanish.
    if ((fix)); then
        gw_netns fixmtu gwa >/dev/null
        gw_netns fixmtu gwb >/dev/null
    fi
    echo start >&8
    echo start >&7
    for _ in $(seq "$SECONDS_RUN"); do
        sleep 1
        echo "$show" >&8
    done
    printf 'stop\nquit\n' >&7
    printf 'stop\nquit\n' >&8
    exec 7>&- 8>&-
    wait
}

mkfifos() { local n; for n in "$@"; do rm -f "$out/runs/fifo-$n"; mkfifo "$out/runs/fifo-$n"; done; }

gw_log "refs: dpdk-testpmd txonly (gwa) -> rxonly (gwb) on the veths, bond mode 2, $FRAME-byte frames"
mkfifos a b
af="framesz=10240,blocksz=40960,framecnt=2048"
testpmd b gwb 0@0,1@1 rxonly 0x4 "net_af_packet0,iface=veth-b0,$af" "net_af_packet1,iface=veth-b1,$af" \
    "net_bonding0,mode=2,slave=net_af_packet0,slave=net_af_packet1,xmit_policy=l34"
testpmd a gwa 0@1,1@0 txonly 0x4 "net_af_packet0,iface=veth-a0,$af" "net_af_packet1,iface=veth-a1,$af" \
    "net_bonding0,mode=2,slave=net_af_packet0,slave=net_af_packet1,xmit_policy=l34"
capacity a b "show port stats 2" 1

gw_log "refs: dpdk-testpmd txonly (vhost-user) -> rxonly (virtio-user) on the cable, $FRAME-byte frames"
mkfifos ca cb
rm -f "${CABLE}0.sock" "${CABLE}1.sock"
gw_cleanup_push rm -f "${CABLE}0.sock" "${CABLE}1.sock"
testpmd cb gwb 0@0,1@1 rxonly 0x3 "net_virtio_user0,path=${CABLE}0.sock,server=1,queue_size=1024" \
    "net_virtio_user1,path=${CABLE}1.sock,server=1,queue_size=1024"
for _ in $(seq 100); do [[ -S ${CABLE}0.sock && -S ${CABLE}1.sock ]] && break; sleep 0.1; done
testpmd ca gwa 0@1,1@0 txonly 0x3 "net_vhost0,iface=${CABLE}0.sock,client=1" \
    "net_vhost1,iface=${CABLE}1.sock,client=1"
capacity ca cb "show port stats all"
rm -f "${CABLE}0.sock" "${CABLE}1.sock"

gw_log "refs: TCP 64 KB and ZeroMQ, $COUNT messages of $SIZE bytes"
ip -n gwa addr add 198.18.99.1/24 dev veth-a0
ip -n gwb addr add 198.18.99.2/24 dev veth-b0
gw_cleanup_push ip -n gwa addr flush dev veth-a0
gw_cleanup_push ip -n gwb addr flush dev veth-b0
gw_netns fixmtu gwa >/dev/null
gw_netns fixmtu gwb >/dev/null
kernel_ref() { # PATH RECV-CMD SEND-CMD
    local name=$1 rpid
    ip netns exec gwb taskset -c 1 "$ROOT/build/app/gw-ref" "$2" 5555 "$COUNT" "$SIZE" \
        >"$out/runs/$name.json" 2>"$out/runs/$name.err" &
    rpid=$!
    gw_wait_ready "$out/runs/$name.err" ready "$rpid" "the $name receiver"
    ip netns exec gwa taskset -c 0 "$ROOT/build/app/gw-ref" "$3" 198.18.99.2 5555 "$COUNT" "$SIZE" ||
        gw_log "refs: $name sender failed"
    wait "$rpid" || gw_log "refs: $name receiver failed"
}
kernel_ref tcp_64k tcp-recv tcp-send
kernel_ref zmq zmq-pull zmq-push

python3 - "$out" "$SIZE" "$FRAME" <<'PY'
import json, re, sys
out, size, frame = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
refs = {}
per_frame = (frame - 20 - 8 - 32) // (size + 16)
# "show port stats" once a second: Rx-pps since the previous one, per port
# shown. The first reading covers the start; take the median of the rest.
for key, log, ports in (("testpmd", "b", 1), ("testpmd_cable", "cb", 2)):
    pps = [int(x) for x in re.findall(r"Rx-pps:\s+(\d+)", open(f"{out}/runs/testpmd-{log}.log").read())]
    # one reading per port each second: add the ports up
    sums = [sum(pps[i:i + ports]) for i in range(0, len(pps) - ports + 1, ports)]
    sums = sorted(p for p in sums[1:] if p > 0)
    if sums:
        p = sums[len(sums) // 2]
        refs[key] = {"frame_bytes": frame, "pps": p, "gbps": round(p * frame * 8 / 1e9, 2),
                     "msgs_per_frame": per_frame, "msg_capacity": p * per_frame}
for name in ("tcp_64k", "zmq"):
    try:
        refs[name] = json.load(open(f"{out}/runs/{name}.json"))
    except Exception:
        pass
print(json.dumps(refs))
PY
