#!/usr/bin/env bash
# bench_ab.sh: this tree against another revision, in one run on this
# machine, so that both see the same load: the revision is built in a
# worktree of its own, then the unpaced maximum (4 x 250 writers, every
# message verified) runs REPS times per side, interleaved (A, B, A, B...),
# each host's processes pinned to its own CPU as in bench.sh. Each side
# runs its own scripts and binaries. Prints the medians and B/A, of the
# rate and of the gateways' CPU seconds per million messages.
#
#   scripts/bench_ab.sh REV [--reps N] [--msgs M] [--link cable|veth] [-- PAIR_ARGS...]
#
# REV is anything git names (a commit, main~3, a tag); PAIR_ARGS go to this
# tree's pair.sh only (e.g. -- --workers 2 --receivers 2). Results in
# results/bench-ab-<time>/ (ab.csv and every run's JSON).
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
(($#)) || gw_die "usage: bench_ab.sh REV [--reps N] [--msgs M] [--link cable|veth] [-- PAIR_ARGS...]"
rev=$1
shift
reps=5 msgs=2000 link=cable sets=()
while (($#)); do
    case $1 in
    --reps) reps=$2; shift 2 ;;
    --msgs) msgs=$2; shift 2 ;;
    --link) link=$2; shift 2 ;;
    --) shift; sets=("$@"); break ;;
    *) gw_die "bench_ab.sh: unknown option $1 (see the header of scripts/bench_ab.sh)" ;;
    esac
done
root=$(gw_root)
sha=$(git -C "$root" rev-parse --verify --quiet "$rev^{commit}") ||
    gw_die "bench_ab.sh: git knows no revision '$rev' (try a commit id or main~1)"
base=/tmp/gridwire-ab-${sha:0:12}
if [[ ! -x $base/build/app/gridwired ]]; then
    gw_log "ab: building $rev (${sha:0:12}) in $base"
    rm -rf "$base"
    git -C "$root" worktree prune
    git -C "$root" worktree add --detach "$base" "$sha" >/dev/null
    meson setup "$base/build" "$base" >"$base.setup.log" 2>&1 || { cat "$base.setup.log" >&2; exit 1; }
    ninja -C "$base/build" >"$base.build.log" 2>&1 || { tail -20 "$base.build.log" >&2; exit 1; }
fi
out=$root/results/bench-ab-$(date +%Y%m%d-%H%M%S)
mkdir -p "$out"
export GW_PIN_A=0 GW_PIN_B=1
for r in $(seq "$reps"); do
    for side in A B; do
        tree=$base
        [[ $side == B ]] && tree=$root
        gw_log "ab: run $r/$reps, $side ($([[ $side == A ]] && echo "$rev" || echo "this tree"))"
        args=(--link "$link" --procs 4 --writers 250 --msgs "$msgs")
        [[ $side == B ]] && args+=("${sets[@]}")
        "$tree/scripts/pair.sh" "${args[@]}" >"$out/$side-$r.json" 2>"$out/$side-$r.err" ||
            gw_log "ab: that run failed (see $out/$side-$r.err)"
    done
done
python3 - "$out" "$reps" "$rev" <<'PY'
import json, statistics, sys
out, reps, rev = sys.argv[1], int(sys.argv[2]), sys.argv[3]
rate = {"A": [], "B": []}
cpu = {"A": [], "B": []}  # the gateways' CPU seconds per million messages
for side in rate:
    for r in range(1, reps + 1):
        try:
            j = json.loads(open(f"{out}/{side}-{r}.json").read().strip().splitlines()[-1])
        except Exception:
            continue
        if j.get("delivered") == j.get("sent") and not j.get("order_violations"):
            rate[side].append(j["msgs_per_s"])
            cpu[side].append(j.get("gw_cpu_s_per_M"))
with open(f"{out}/ab.csv", "w") as c:
    c.write("side,run,msgs_per_s,gw_cpu_s_per_M\n")
    for side, v in rate.items():
        for i, x in enumerate(v, 1):
            g = cpu[side][i - 1]
            c.write(f"{side},{i},{x},{'' if g is None else g}\n")
if not rate["A"] or not rate["B"]:
    print("ab: a side has no verified run; see the .err files in " + out)
    sys.exit(1)
a, b = statistics.median(rate["A"]), statistics.median(rate["B"])
print(f"A ({rev}): median {a/1e6:.2f} M msg/s over {len(rate['A'])} runs "
      f"({min(rate['A'])/1e6:.2f}..{max(rate['A'])/1e6:.2f})")
print(f"B (this tree): median {b/1e6:.2f} M msg/s over {len(rate['B'])} runs "
      f"({min(rate['B'])/1e6:.2f}..{max(rate['B'])/1e6:.2f})")
print(f"B/A = {b/a:.2f}")
cpu = {side: [g for g in v if g is not None] for side, v in cpu.items()}
if cpu["A"] and cpu["B"]:
    ca, cb = statistics.median(cpu["A"]), statistics.median(cpu["B"])
    print(f"gateways' CPU s per million messages: A {ca:.3f}, B {cb:.3f}, B/A = {cb/ca:.2f}")
PY
gw_log "ab: results in $out"
