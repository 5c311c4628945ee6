#!/usr/bin/env bash
# bench_failover.sh: what losing a link costs, bond mode 4 against the
# parallel port ([port] kind = parallel), in one run on the cable. For each
# mode:
#   1. cuts: a paced, timestamped stream (PROCS x WRITERS writers, RATE
#      msg/s in all), CUTS member cuts at random moments (alternating
#      members, each down DOWN_MS, then brought back and back in service at
#      both ends before the next: for mode 4 until LACP distributes on it
#      again), every message verified; the receiver keeps messages, p99 and
#      max latency per 100 ms (gw-perf rx --timeline);
#   2. a lossy member: the same pace with 20 % of what member 1 brings in
#      lost, at both gateways, the other member clean;
#   3. the unpaced maximum (4 x 250 writers).
# It ends with failover.json, a table (report.txt) and a plot of latency
# through the cuts (failover.png), in results/bench-failover-<time>/.
#
#   scripts/bench_failover.sh [--cuts N] [--rate MSGS_PER_S] [--procs P]
#                             [--writers W] [--down-ms MS] [--lossy-s S]
#                             [--max-msgs M] [--modes mode4,parallel]
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
ROOT=$(gw_root)
GWCTL=$ROOT/build/app/gwctl
cuts=20 rate=200000 procs=4 writers=50 down_ms=1000 lossy_s=10 max_msgs=2000 modes=mode4,parallel
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
    *) gw_die "bench_failover.sh: unknown option $1 (see the header of scripts/bench_failover.sh)" ;;
    esac
done
out=$ROOT/results/bench-failover-$(date +%Y%m%d-%H%M%S)
mkdir -p "$out"
export GW_LINK=cable
gw_ns_up >/dev/null
per_proc=$((rate / procs))
per_writer_s=$((rate / (procs * writers))) # messages a writer sends a second

args_of() { # MODE: the gateways' arguments
    [[ $1 == parallel ]] && echo "--set port.kind=parallel" || true
}

for mode in ${modes//,/ }; do
    [[ $mode == mode4 || $mode == parallel ]] || gw_die "--modes takes mode4 and parallel"
    export GW_ARGS_A GW_ARGS_B
    GW_ARGS_A=$(args_of "$mode") GW_ARGS_B=$(args_of "$mode")

    # 1. Cuts. Each takes the down time, the time back into service (a
    # second for the cable's end to reconnect, about 3 s for LACP) and a
    # random wait: about 6 s; the stream runs a little longer.
    secs=$((cuts * 7 + 6))
    gw_log "failover $mode: $cuts cuts in a paced run of $rate msg/s ($procs x $writers writers, about $secs s)"
    gw_pair_bg "$out/$mode-cuts.out" --procs "$procs" --writers "$writers" \
        --msgs $((per_writer_s * secs)) --rate "$per_proc" --timeline "$out/$mode-timeline.csv"
    python3 - "$GWCTL" "$cuts" "$down_ms" "$mode" "$out/$mode-cuts.json" <<'PY'
import json, random, subprocess, sys, time
gwctl, cuts, down_ms, mode, path = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5]
rng = random.Random(19)

def port(node):
    return json.loads(subprocess.run([gwctl, "-n", node, "raw", "/gridwire/port"],
                                     capture_output=True, text=True, check=True).stdout)

def in_service(m):
    # Both ends: the link up, and for mode 4 in service (mode 4: LACP distributing on it).
    for node in ("alpha", "beta"):
        p = port(node)
        if not p[f"member{m}_up"] or not p[f"member{m}_in_service"]:
            return False
    return True

time.sleep(3)
done = []
for i in range(cuts):
    time.sleep(rng.uniform(0.5, 1.5))
    m = i % 2
    t_down = time.monotonic()
    subprocess.run([gwctl, "-n", "alpha", "member", str(m), "down"], check=True, capture_output=True)
    time.sleep(down_ms / 1000)
    t_up = time.monotonic()
    subprocess.run([gwctl, "-n", "alpha", "member", str(m), "up"], check=True, capture_output=True)
    deadline = time.monotonic() + 30
    while not in_service(m) and time.monotonic() < deadline:
        time.sleep(0.1)
    t_back = time.monotonic()
    done.append({"member": m, "down_s": t_down, "up_s": t_up, "in_service_s": t_back})
    print(f"  cut {i + 1}/{cuts}: member {m} down {down_ms} ms, back in service "
          f"{t_back - t_up:.1f} s after", file=sys.stderr, flush=True)
json.dump(done, open(path, "w"))
PY
    wait "$GW_PID_PAIR" || true
    tail -1 "$out/$mode-cuts.out" >"$out/$mode-cuts-run.json"

    # 2. One member losing a fifth of what it brings in, at both ends.
    gw_log "failover $mode: member 1 loses 20 %, $lossy_s s at $rate msg/s"
    lossy="--set fault.member=1 --set fault.drop_ppm=200000"
    GW_ARGS_A="$GW_ARGS_A $lossy" GW_ARGS_B="$GW_ARGS_B $lossy" "$ROOT/scripts/pair.sh" --keep-ns \
        --procs "$procs" --writers "$writers" --msgs $((per_writer_s * lossy_s)) --rate "$per_proc" \
        2>"$out/$mode-lossy.err" | tail -1 >"$out/$mode-lossy-run.json"

    # 3. As fast as it goes.
    gw_log "failover $mode: the unpaced maximum, 4 x 250 writers x $max_msgs"
    "$ROOT/scripts/pair.sh" --keep-ns --procs 4 --writers 250 --msgs "$max_msgs" \
        2>"$out/$mode-max.err" | tail -1 >"$out/$mode-max-run.json"
done
python3 "$ROOT/scripts/bench_failover_report.py" "$out" "$cuts" "$rate"
gw_log "results in $out"
