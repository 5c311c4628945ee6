#!/usr/bin/env bash
# refs.sh OUT: the benchmark's reference rows, measured on the two-namespace
# link (which must be up, with no gateway running), as one JSON object on
# stdout; logs in OUT/runs/.
#
#  testpmd  the bonded link's capacity: dpdk-testpmd txonly (multi-flow,
#           so l34 hashing uses both members) in gwa, rxonly in gwb, each
#           bonding veth[0-1] over af_packet, 9000-byte frames; the receive
#           rate over the last seconds, also as 225-byte messages at
#           gridwire's packing (16-byte record header each, 74 bytes of
#           headers per frame). Bond mode 2 (l34), not 4: an rxonly testpmd
#           never transmits, so LACP would never let data through; the data
#           path (af_packet members, l34 hash) is the same;
#  tcp_64k  TCP with 64 KB application buffering, one sender, one receiver;
#  zmq      ZeroMQ PUSH/PULL over TCP, one sender, one receiver
#           (both app/gw-ref, over veth-a0/veth-b0 with kernel addresses).
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
ROOT=$(gw_root)
out=${1:?usage: refs.sh OUT}
mkdir -p "$out/runs"
SIZE=225 FRAME=9000 SECONDS_RUN=${GW_REF_SECONDS:-8} COUNT=${GW_REF_MSGS:-20000000}

# testpmd NS LCORES LETTER MODE: interactive, commands from OUT/runs/fifo-LETTER.
testpmd() {
    local ns=$1 lcores=$2 l=$3 mode=$4
    ip netns exec "$ns" dpdk-testpmd --no-pci --no-huge -m 1024 --no-shconf \
        --file-prefix "ref$l" --lcores="$lcores" \
        --vdev "net_af_packet0,iface=veth-${l}0,framesz=10240,blocksz=40960,framecnt=2048" \
        --vdev "net_af_packet1,iface=veth-${l}1,framesz=10240,blocksz=40960,framecnt=2048" \
        --vdev "net_bonding0,mode=2,slave=net_af_packet0,slave=net_af_packet1,xmit_policy=l34" \
        -- -i --mbuf-size=10336 --total-num-mbufs=8192 --forward-mode="$mode" --txpkts=$FRAME \
        --txonly-multi-flow --portmask=0x4 --no-lsc-interrupt \
        <"$out/runs/fifo-$l" >"$out/runs/testpmd-$l.log" 2>&1 &
    gw_cleanup_push _gw_stop_pid $!
}

gw_log "refs: dpdk-testpmd txonly (gwa) -> rxonly (gwb), bond mode 2, $FRAME-byte frames"
rm -f "$out/runs/fifo-a" "$out/runs/fifo-b"
mkfifo "$out/runs/fifo-a" "$out/runs/fifo-b"
testpmd gwb 0@0,1@1 b rxonly
testpmd gwa 0@1,1@0 a txonly
exec 7>"$out/runs/fifo-a" 8>"$out/runs/fifo-b"
for _ in $(seq 300); do
    grep -q "testpmd>" "$out/runs/testpmd-a.log" && grep -q "testpmd>" "$out/runs/testpmd-b.log" && break
    sleep 0.1
done
# Starting an af_packet port resets the kernel MTU to 1500 (machine notes):
# set it again before the first frame, or 9000-byte frames vanish.
gw_netns fixmtu gwa >/dev/null
gw_netns fixmtu gwb >/dev/null
echo start >&8
echo start >&7
for _ in $(seq "$SECONDS_RUN"); do
    sleep 1
    echo "show port stats 2" >&8
done
printf 'stop\nquit\n' >&7
printf 'stop\nquit\n' >&8
exec 7>&- 8>&-
wait

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
# "show port stats 2" once a second: Rx-pps since the previous one. The
# first reading covers the start; take the median of the rest.
pps = [int(x) for x in re.findall(r"Rx-pps:\s+(\d+)", open(f"{out}/runs/testpmd-b.log").read())]
pps = sorted(p for p in pps[1:] if p > 0)
if pps:
    p = pps[len(pps) // 2]
    per_frame = (frame - 20 - 8 - 32) // (size + 16)
    refs["testpmd"] = {"frame_bytes": frame, "pps": p, "gbps": round(p * frame * 8 / 1e9, 2),
                       "msgs_per_frame": per_frame, "msg_capacity": p * per_frame}
for name in ("tcp_64k", "zmq"):
    try:
        refs[name] = json.load(open(f"{out}/runs/{name}.json"))
    except Exception:
        pass
print(json.dumps(refs))
PY
