#!/usr/bin/env bash
# bench_failover.sh: what losing a link costs, bond mode 4 against the
# parallel port ([port] kind = parallel), in one run on the cable. For each
# mode:
#   1. cuts: a paced, timestamped stream (PROCS x WRITERS writers, RATE
#      msg/s in all), CUTS member cuts at random moments (alternating
#      members, each down DOWN_MS, then brought back and back in service at
#      both ends before the next: for mode 4 until LACP distributes on it
#      again), every message verified; the receiver keeps messages, p99 and
#      max latency per 100 ms (gw-perf rx --timeline). Two kinds of cut,
#      each in a stream of its own. A silent cut: both gateways drop every
#      gridwire frame the member brings in (gwctl fault N 1000000) while its
#      link stays up, as a network that fails beyond the link does (LACP's
#      own frames still pass). A link cut unplugs the
#      member's cable end at the receiving gateway (--cut-at beta): what was
#      on that wire is lost, as when a cable is pulled (unplugging it at the
#      sender instead takes it out of the sender's bond first, which loses
#      nothing). For this the cable's ends are swapped: beta holds the
#      vhost-user ends, whose unplug and plug never wait, and alpha the
#      virtio-user ends (a virtio-user end plugged in again waits in accept()
#      until the other end connects, up to a second, which would stall its
#      gateway's lcore);
#   2. a lossy member: the same pace with 20 % of what member 1 brings in
#      lost, at both gateways, the other member clean;
#   3. the unpaced maximum (4 x 250 writers), the modes in turn, three
#      times each (the median counts).
# It ends with failover.json, a table (report.txt) and a plot of latency
# through the cuts (failover.png), in results/bench-failover-<time>/.
#
#   scripts/bench_failover.sh [--cuts N] [--rate MSGS_PER_S] [--procs P]
#                             [--writers W] [--down-ms MS] [--lossy-s S]
#                             [--max-msgs M] [--modes mode4,parallel]
#                             [--cut-at beta|alpha]
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
ROOT=$(gw_root)
GWCTL=$ROOT/build/app/gwctl
cuts=20 rate=200000 procs=4 writers=50 down_ms=1000 lossy_s=10 max_msgs=4000 modes=mode4,parallel
cut_at=beta
while (($#)); do
    case $1 in
    --cuts) cuts=$2; shift 2 ;;
    --rate) rate=$2; shift 2 ;;
    --procs) procs=$2; shift 2 ;;
    --writers) writers=$2; shift 2 ;;
    --down-ms) down_ms=$2; shift 2 ;;
    --lossy-s) lossy_s=$2; shift 2 ;;
    --max-msgs) max_msgs=$2; shift 2 ;;
    --modes) modes=$2; shift 2 ;;
    --cut-at) cut_at=$2; shift 2 ;;
    *) gw_die "bench_failover.sh: unknown option $1 (see the header of scripts/bench_failover.sh)" ;;
    esac
done
out=$ROOT/results/bench-failover-$(date +%Y%m%d-%H%M%S)
mkdir -p "$out"
printf '{"down_ms": %s, "cut_at": "%s"}\n' "$down_ms" "$cut_at" >"$out/params.json"
export GW_LINK=cable
gw_ns_up >/dev/null
per_proc=$((rate / procs))
per_writer_s=$((rate / (procs * writers))) # messages a writer sends a second

args_of() { # MODE SIDE: the gateways' arguments (SIDE: the cable end kind it holds)
    local ends="--set port.members=$2:/run/gridwire/cable0.sock,$2:/run/gridwire/cable1.sock"
    [[ $1 == parallel ]] && echo "$ends --set port.kind=parallel" || echo "$ends"
}
[[ $cut_at == alpha || $cut_at == beta ]] || gw_die "--cut-at takes alpha or beta"

for mode in ${modes//,/ }; do
    [[ $mode == mode4 || $mode == parallel ]] || gw_die "--modes takes mode4 and parallel"
    export GW_ARGS_A GW_ARGS_B
    # The receiving side holds the ends that replug without waiting.
    if [[ $cut_at == beta ]]; then
        GW_ARGS_A=$(args_of "$mode" virtio_user) GW_ARGS_B=$(args_of "$mode" vhost)
    else
        GW_ARGS_A=$(args_of "$mode" vhost) GW_ARGS_B=$(args_of "$mode" virtio_user)
    fi

    # 1. Cuts, of two kinds, each in a stream of its own: a link cut (the
    # PMD reports it) takes the down time, the time back into service (a
    # second for the cable's end to reconnect, about 3 s for LACP) and a
    # random wait, about 6 s in mode 4, 3 s parallel; a silent cut (the link
    # stays up) about 3 s. The cuts stop early if the stream has ended.
    for kind in link silent; do
        # (a link cut in mode 4 waits for LACP: about 3 s more)
        per=$([[ $kind == link && $mode == mode4 ]] && echo 65 || echo 35) # tenths of a second
        secs=$((per * cuts / 10 + 10))
        gw_log "failover $mode: $cuts $kind cuts in a paced run of $rate msg/s ($procs x $writers writers, about $secs s)"
        gw_pair_bg "$out/$mode-$kind.out" --procs "$procs" --writers "$writers" \
            --msgs $((per_writer_s * secs)) --rate "$per_proc" --timeline "$out/$mode-$kind-timeline.csv"
        python3 - "$GWCTL" "$cuts" "$down_ms" "$kind" "$out/$mode-$kind-cuts.json" "$cut_at" "$GW_PID_PAIR" <<'PY'
import json, os, random, subprocess, sys, time
gwctl, cuts, down_ms, kind, path, at, pair = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5], sys.argv[6], int(sys.argv[7])
rng = random.Random(19)

def ctl(node, *args):
    return subprocess.run([gwctl, "-n", node, *args], capture_output=True, text=True, check=True).stdout

def in_service(m):
    # Both ends: the link up, and in service (mode 4: LACP distributing on it).
    try:
        for node in ("alpha", "beta"):
            p = json.loads(ctl(node, "raw", "/gridwire/port"))
            if not p[f"member{m}_up"] or not p[f"member{m}_in_service"]:
                return False
    except (subprocess.CalledProcessError, ValueError, KeyError):
        return False
    return True

def streaming():
    try:
        os.kill(pair, 0)
        return True
    except OSError:
        return False

def cut(m, on):
    if kind == "link":
        ctl(at, "member", str(m), "down" if on else "up")
    else:  # both gateways drop all that member brings in; its link stays up
        for node in ("alpha", "beta"):
            ctl(node, "fault", str(m), "1000000" if on else "0")

time.sleep(3)
done = []
for i in range(cuts):
    time.sleep(rng.uniform(0.5, 1.5))
    if not streaming():
        print(f"  the stream ended after {i} {kind} cuts", file=sys.stderr, flush=True)
        break
    m = i % 2
    t_down = time.monotonic()
    cut(m, True)
    time.sleep(down_ms / 1000)
    t_up = time.monotonic()
    cut(m, False)
    deadline = time.monotonic() + 30
    while not in_service(m) and time.monotonic() < deadline and streaming():
        time.sleep(0.1)
    t_back = time.monotonic()
    done.append({"member": m, "down_s": t_down, "up_s": t_up, "in_service_s": t_back})
    print(f"  {kind} cut {i + 1}/{cuts}: member {m} down {down_ms} ms, back in service "
          f"{t_back - t_up:.1f} s after", file=sys.stderr, flush=True)
json.dump(done, open(path, "w"))
PY
        wait "$GW_PID_PAIR" || true
        tail -1 "$out/$mode-$kind.out" >"$out/$mode-$kind-run.json"
    done

    # 2. One member losing a fifth of what it brings in, at both ends.
    gw_log "failover $mode: member 1 loses 20 %, $lossy_s s at $rate msg/s"
    lossy="--set fault.member=1 --set fault.drop_ppm=200000"
    GW_ARGS_A="$GW_ARGS_A $lossy" GW_ARGS_B="$GW_ARGS_B $lossy" "$ROOT/scripts/pair.sh" --keep-ns \
        --procs "$procs" --writers "$writers" --msgs $((per_writer_s * lossy_s)) --rate "$per_proc" \
        2>"$out/$mode-lossy.err" | tail -1 >"$out/$mode-lossy-run.json"
done

# 3. As fast as each goes: the modes in turn, three times (the median
# counts), so that both see the machine as it is in that minute.
for r in 1 2 3; do
    for mode in ${modes//,/ }; do
        GW_ARGS_A=$(args_of "$mode" vhost) GW_ARGS_B=$(args_of "$mode" virtio_user)
        gw_log "failover $mode: the unpaced maximum ($r of 3), 4 x 250 writers x $max_msgs"
        "$ROOT/scripts/pair.sh" --keep-ns --procs 4 --writers 250 --msgs "$max_msgs" \
            2>"$out/$mode-max-$r.err" | tail -1 >"$out/$mode-max-$r-run.json"
    done
done
python3 "$ROOT/scripts/bench_failover_report.py" "$out" "$cuts" "$rate"
gw_log "results in $out"
