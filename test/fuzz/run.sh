#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# Build the libFuzzer targets with clang straight from the sources (the
# project itself is built with gcc) and run each for SECONDS (default 20).
# One line per target: executions, executions a second, and the corpus's
# size; exit 1 if a target found a crash (or hang, or leak), with the path
# of the input that reproduces it.
#
#   test/fuzz/run.sh [SECONDS] [TARGET...]      a campaign (default: every target)
#   test/fuzz/run.sh --coverage [TARGET...]     line coverage of the code each
#                                               target is for, from its corpus
#   test/fuzz/run.sh --merge [TARGET...]        the corpus, minimized, into
#                                               test/fuzz/seeds/<target>
#
# TARGET: wire (frames as they arrive), lane (the reliable protocol's state
# machine), auth ([auth] sealing and opening, key files), config (a config
# file and --set), chan (a client's channel as the gateway reads it), ctl
# (requests on the control socket, from several clients).
#
# Everything goes under $GW_FUZZ_DIR (default build/): the binaries
# fuzz_<target>, the corpora fuzz-corpus/<target> (kept between runs, so
# longer runs build on shorter ones; seeded with the inputs written below
# and test/fuzz/seeds/<target>), and fuzz-out/<target> with the last log and
# any reproducer. To replay one:
#
#   build/fuzz_lane build/fuzz-out/lane/crash-...   (FZ_TRACE=1: every operation)
set -euo pipefail

ROOT="$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.." && pwd -P)"
cd "$ROOT"

ALL=(wire lane auth config chan ctl)
mode=run
case "${1:-}" in
--coverage) mode=coverage; shift ;;
--merge) mode=merge; shift ;;
esac
secs=20
if [[ $mode == run && "${1:-}" =~ ^[0-9]+$ ]]; then
    secs=$1
    shift
fi
[[ "$secs" -gt 0 ]] || { echo "usage: $0 [SECONDS | --coverage | --merge] [TARGET...]" >&2; exit 2; }
targets=("$@")
((${#targets[@]})) || targets=("${ALL[@]}")
OUT=${GW_FUZZ_DIR:-build}

die() { echo "fuzz: $*" >&2; exit 2; }

command -v clang >/dev/null || die "clang not found (Debian: clang)"
rt="$(clang --print-runtime-dir 2>/dev/null)/libclang_rt.fuzzer-x86_64.a"
[[ -f "$rt" ]] || die "no libFuzzer runtime ($rt); install libclang-rt-14-dev"

mkdir -p "$OUT"
# The tree is shared: one run at a time per output directory.
exec 8>>"$OUT/.fuzz.lock"
flock 8

# -fno-sanitize-recover: UBSan would otherwise only print and go on.
# shellcheck disable=SC2054  # the commas belong to -fsanitize
CFLAGS=(-std=gnu11 -g -O1 -march=corei7 -Wall -Wextra -Wno-unused-parameter
    -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all
    -I lib/wire -I lib/proto -I lib/auth -I lib/config -I lib/chan -I lib/dir -I lib/topic -I drivers
    -I test/fuzz)
WIRE="lib/wire/gw_wire.c lib/wire/gw_crc32c.c"
# The code each target is for: compiled in (instrumented), and what
# --coverage reports on.
declare -A SRCS=(
    [wire]="$WIRE"
    [lane]="lib/proto/gw_lane.c lib/proto/gw_cc.c $WIRE"
    [auth]="lib/auth/gw_auth.c $WIRE"
    [config]="lib/config/gw_config.c drivers/gw_port.c drivers/gw_af_packet.c drivers/gw_pci.c drivers/gw_tap.c drivers/gw_vhost.c $WIRE"
    [chan]="lib/chan/gw_chan_gw.c lib/chan/gw_chan_client.c"
    [ctl]="lib/chan/gw_ctl.c lib/dir/gw_dir.c lib/topic/gw_topic.c"
)
# What --coverage reports on: the code each target is for, without the
# helpers it links (the lane's frames, the drivers' open paths).
declare -A COVER=(
    [wire]="$WIRE" [lane]="lib/proto/gw_lane.c lib/proto/gw_cc.c" [auth]="lib/auth/gw_auth.c"
    [config]="lib/config/gw_config.c" [chan]="lib/chan/gw_chan_gw.c"
    [ctl]="lib/chan/gw_ctl.c lib/dir/gw_dir.c lib/topic/gw_topic.c"
)
# DPDK's headers and libraries (rte_cfgfile, rte_ring, the drivers' ethdev
# calls) and the AEADs' own code: not instrumented, linked as they are.
dpdk_cflags=$(pkg-config --cflags libdpdk 2>/dev/null) || die "no DPDK (Debian: libdpdk-dev)"
dpdk_libs="$(pkg-config --libs libdpdk) -lrte_net_bond -lrte_bus_vdev -lrte_bus_pci"
# The lane's and ctl's inputs are scripts of operations, not values to
# match: libFuzzer's comparison tracing in the lane's time arithmetic and
# the directory's walks took most of an execution and found nothing more
# (the same coverage, 2.5x and 3.4x the executions).
declare -A XFLAGS=([config]="$dpdk_cflags" [chan]="$dpdk_cflags"
    [lane]="-fno-sanitize-coverage=trace-cmp" [ctl]="-fno-sanitize-coverage=trace-cmp")
declare -A LIBS=([auth]="-lIPSec_MB -lsodium" [config]="$dpdk_libs" [chan]="$dpdk_libs")
# Frames go up to 9014 bytes; scripts need no more than a few KB.
declare -A MAXLEN=([wire]=9216 [lane]=4096 [auth]=4200 [config]=8192 [chan]=2048 [ctl]=4096)

build() { # target [suffix extra-flags...]
    local t=$1 suffix=${2:-}
    shift $(($# > 1 ? 2 : 1))
    [[ -n "${SRCS[$t]:-}" ]] || die "unknown target '$t' (${ALL[*]})"
    # shellcheck disable=SC2086  # the source and library lists are words
    clang "${CFLAGS[@]}" "$@" ${XFLAGS[$t]:-} "test/fuzz/fuzz_$t.c" ${SRCS[$t]} ${LIBS[$t]:-} \
        -o "$OUT/fuzz_$t$suffix.tmp" || die "cannot build fuzz_$t"
    mv -f "$OUT/fuzz_$t$suffix.tmp" "$OUT/fuzz_$t$suffix"
}

# The keywords of a config file, for the config target's mutations.
config_dict() { # file
    sed -n 's/^;* *\[\([a-z]*\)\].*/\1/p; s/^;* *\([a-z_]*\) = .*/\1/p' config/*.ini | sort -u |
        awk '{ printf "\"%s\"\n\"%s = \"\n", $1, $1 }' >"$1"
    printf '"[%s]\\x0a"\n' eal node port proto chan idle lcores auth fault >>"$1"
    printf '"\\x00%s."\n' eal node port proto chan idle lcores auth fault >>"$1"
}

# Valid inputs to start from: the fuzzer mutates these rather than finding
# the magic, port and lengths by itself. Layouts: test/fuzz/fuzz_*.c.
seed() { # target corpus-dir
    python3 - "$1" "$2" <<'PY'
import struct, sys, os
target, d = sys.argv[1], sys.argv[2]

def crc32c(b):
    c = 0xffffffff
    for x in b:
        c ^= x
        for _ in range(8):
            c = (c >> 1) ^ (0x82f63b78 if c & 1 else 0)
    return c ^ 0xffffffff

def rec(kind, data, ep=0x1234, chan=3, msg=7):
    return struct.pack('<HBBIHHI', len(data), kind, 0, ep, chan, 0, msg) + data

data = rec(1, b'hello') + rec(2, b'') + rec(1, b'x' * 40)
ack = struct.pack('<IIHH', 0x5eed, 100, 16, 0) + b'\x05\x80'
hello = struct.pack('<IHBB', 0, 100, 5, 0) + b'alpha'

def frame(ftype, payload, port=47000):
    gh = struct.pack('<HBBHHHHIIII', 0x5747, 1, ftype, 1, 2, 0, 3, 0x5eed, 41, 40,
                     len(payload))
    gh += struct.pack('<I', crc32c(gh + b'\0\0\0\0' + payload))
    iplen = 20 + 8 + 32 + len(payload)
    eth = bytes.fromhex('02000000000b' '02000000000a') + b'\x08\x00'
    ip = struct.pack('>BBHHHBBHII', 0x45, 0, iplen, 0, 0x4000, 64, 17, 0,
                     0x0a000001, 0x0a000002)
    udp = struct.pack('>HHHH', 40001, port, iplen - 20, 0)
    return eth + ip + udp + gh + payload

def sealed(ftype, payload):
    # mode 1: type, nodes, lane, nrec, epoch, seq, base, src ip/port/mac,
    # padding, truncation, bit flip; then the payload
    return (b'\x01' + struct.pack('<BHHHHIIIIHBBHHB', ftype, 1, 2, 0, 3, 0x5eed, 41, 40,
                                   0x0a000001, 40001, 0x0a, 4, 10, 20, 3) + payload)

seeds = {}
if target == 'wire':
    for name, t, p in (('data', 1, data), ('ack', 2, ack), ('hello', 3, hello)):
        seeds['raw-' + name] = b'\x00' + frame(t, p)
        seeds['sealed-' + name] = sealed(t, p)
        seeds['crcfix-' + name] = b'\x02' + frame(t, p)
    seeds['padded'] = b'\x00' + frame(1, data) + b'\0' * 20
    seeds['roundtrip'] = b'\x03' + bytes(range(256)) * 2
elif target == 'lane':
    # now, tx epoch, tx win 2^3 / rto byte / rto_min in us, rx win 2^3; then
    # operations (low nibble op, high nibble argument): push 4, deliver 4,
    # pop, build and deliver the ack, push 4, lose them, time, due, deliver,
    # pop, ack
    head = struct.pack('<II', 1000, 0x5eed) + bytes([3, 3]) + struct.pack('<H', 1000) + b'\x03'
    ops = bytes([0x30, 0x02, 0, 0x02, 0, 0x02, 0, 0x02, 0, 0x74, 0x05, 0x06, 0,
                 0xb0, 0x09, 0xfa, 0, 0x02, 0, 0x02, 0, 0x02, 0, 0x02, 0, 0x74, 0x05, 0x06, 0])
    seeds['clean'] = head + ops
    # and with a receiver restart in the middle
    seeds['rx-restart'] = head + ops[:13] + b'\x0e\x02' + ops[13:]
    # a parallel port (rx win byte with bit 7: copies tracked, window 8):
    # four frames delivered and kept on member 0, then brought again by
    # member 1; pop all, ack
    par = bytes([0x30, 0x12, 0, 0x12, 1, 0x12, 2, 0x12, 3, 0x22, 0, 0x22, 0, 0x22, 0, 0x22, 0,
                 0x34, 0x05, 0x06, 0])
    seeds['parallel'] = head[:-1] + b'\x8a' + par
    # a peer's timeout: four sent, one delivered, two given up, four more
    seeds['give-up'] = head + bytes([0x30, 0x02, 0, 0xdf, 0x30, 0x02, 0, 0x02, 0, 0x04, 0x05, 0x06, 0])
if target == 'auth':
    # mode byte (bit 7: encrypt), then per mode: 0 a frame as received;
    # 1 type, lane, seq, base, edit, at, value, payload; 2 a key file
    fields = lambda edit, at=0, val=0: (bytes([0, ]) + struct.pack('<HIIBHB', 3, 41, 40, edit, at, val))
    for enc in (0, 0x80):
        tag = 'enc' if enc else 'auth'
        seeds[f'{tag}-raw'] = bytes([enc]) + frame(1, data)
        seeds[f'{tag}-sealed'] = bytes([enc | 1]) + fields(0) + data
        seeds[f'{tag}-flip'] = bytes([enc | 1]) + fields(1, 100, 3) + data
        seeds[f'{tag}-cut'] = bytes([enc | 1]) + fields(2, 90) + data
        seeds[f'{tag}-trailer'] = bytes([enc | 1]) + fields(3, 5, 0xff) + data
    seeds['key'] = b'\x02' + b'0123456789abcdef' * 4 + b'\n'
    seeds['key-short'] = b'\x02' + b'0123456789abcdef' * 3 + b'\n'
if target == 'config':
    # the shipped configs, with and without overrides (the file, NUL, --sets)
    for ini in sorted(os.listdir('config')):
        if ini.endswith('.ini'):
            text = open(os.path.join('config', ini), 'rb').read()
            seeds[ini] = text
            seeds[ini + '-set'] = text + b'\0port.mtu=1500\0proto.window=64\0node.name=x'
    seeds['sets-only'] = b'\0lcores.workers=2\0lcores.receivers=2\0auth.mode=encrypt'
if target == 'chan':
    # sends of both classes, peek and consume, deliveries, publish, receive;
    # then the same with a scribble on a ring's header in the middle
    send = lambda cls, n: bytes([cls << 4]) + struct.pack('<HIH', 2, 0x1234, n)
    s = (send(0, 100) + send(1, 40) + send(0, 1024) + bytes([0x72, 0x03, 0x52, 0x13]) +
         bytes([0x05]) + struct.pack('<HI', 200, 9) + bytes([0x06, 0x07, 0x04, 0x14, 0x09]))
    seeds['clean'] = s
    seeds['scribbled'] = s[:14] + bytes([0x08]) + struct.pack('<IB', 0xffff, 3) + s[14:]
    seeds['garbage'] = s[:7] + bytes([0xf1]) + struct.pack('<I', 4096) + bytes(range(16)) + s[7:]
if target == 'ctl':
    # (client | 4 to hang up), then a struct gw_ctl_msg: op, status, arg, arg2, name[64]
    msg = lambda k, op, arg=0, name=b'': bytes([k]) + struct.pack('<IiII', op, 0, arg, 0) + name.ljust(64, b'\0')
    s = (msg(0, 1, 1) + msg(1, 1, 1) + msg(0, 2, 0, b'sink') + msg(1, 2, 0, b'sink') +
         msg(1, 3, 0, b'sink') + msg(0, 3, 0, b'sink') + msg(0, 4, 1) + msg(3, 1, 1) +
         msg(2, 2, 0, b'early') + msg(0, 2, 0, b'~call.101') + msg(0, 1, 1) + msg(1, 9) + bytes([4]))
    seeds['session'] = s
for name, b in seeds.items():
    with open(os.path.join(d, 'seed-' + name), 'wb') as f:
        f.write(b)
PY
}

# --coverage: each target rebuilt with clang's source coverage, its corpus
# and seeds replayed, and the lines of its own code reached, per file.
coverage() { # target
    local t=$1 dir="$OUT/fuzz-cov/$t"
    rm -rf "$dir"
    mkdir -p "$dir" "$OUT/fuzz-corpus/$t"
    build "$t" -cov -fprofile-instr-generate -fcoverage-mapping
    local seeds=()
    [[ -d "test/fuzz/seeds/$t" ]] && seeds=("test/fuzz/seeds/$t")
    LLVM_PROFILE_FILE="$dir/%p.profraw" "$OUT/fuzz_$t-cov" -runs=0 \
        "$OUT/fuzz-corpus/$t" "${seeds[@]}" >"$dir/log" 2>&1 || die "fuzz_$t: the replay failed, see $dir/log"
    llvm-profdata merge -sparse "$dir"/*.profraw -o "$dir/all.profdata"
    # shellcheck disable=SC2086  # the source list is words
    llvm-cov report "$OUT/fuzz_$t-cov" -instr-profile="$dir/all.profdata" ${COVER[$t]} |
        awk -v t="$t" 'NR > 2 && $1 != "" && $1 !~ /^-/ {
            printf "fuzz_%s: %-28s lines %6s of %5s (%s)\n", t, ($1 == "TOTAL" ? "all" : $1), $8 - $9, $8, $10 }'
    echo "    (missed lines: llvm-cov show $OUT/fuzz_$t-cov -instr-profile=$dir/all.profdata FILE)"
}

if [[ $mode == coverage ]]; then
    command -v llvm-cov >/dev/null && command -v llvm-profdata >/dev/null ||
        die "llvm-cov or llvm-profdata not found (Debian: llvm)"
fi
failed=0
for t in "${targets[@]}"; do
    [[ -n "${SRCS[$t]:-}" ]] || die "unknown target '$t' (${ALL[*]})"
    corpus="$OUT/fuzz-corpus/$t"
    out="$OUT/fuzz-out/$t"
    mkdir -p "$corpus" "$out"
    if [[ $mode == coverage ]]; then
        coverage "$t"
        continue
    fi
    build "$t"
    if [[ $mode == merge ]]; then
        # What the corpus reaches that the seeds do not, minimized, into the seeds.
        mkdir -p "test/fuzz/seeds/$t"
        before=$(find "test/fuzz/seeds/$t" -type f | wc -l)
        "$OUT/fuzz_$t" -merge=1 -max_len="${MAXLEN[$t]}" "test/fuzz/seeds/$t" "$corpus" \
            >"$out/merge.log" 2>&1 || die "fuzz_$t: the merge failed, see $out/merge.log"
        echo "fuzz_$t: seeds $before -> $(find "test/fuzz/seeds/$t" -type f | wc -l) (test/fuzz/seeds/$t)"
        continue
    fi
    seed "$t" "$corpus"
    rm -f "$out"/crash-* "$out"/timeout-* "$out"/leak-* "$out"/oom-*
    seeds=()
    [[ -d "test/fuzz/seeds/$t" ]] && seeds=("test/fuzz/seeds/$t")
    dict=()
    if [[ $t == config ]]; then
        config_dict "$out/config.dict"
        dict=(-dict="$out/config.dict")
    fi
    # New inputs go to the first directory; the committed seeds stay as they are.
    set +e
    ASAN_OPTIONS=${ASAN_OPTIONS:-quarantine_size_mb=64} \
        "$OUT/fuzz_$t" -max_total_time="$secs" -timeout=5 -max_len="${MAXLEN[$t]}" \
        -print_final_stats=1 -artifact_prefix="$out/" "${dict[@]}" "$corpus" "${seeds[@]}" \
        >"$out/log" 2>&1
    rc=$?
    set -e
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$out/log" | tail -n 1)
    repro=$(sed -n 's/.*Test unit written to //p' "$out/log" | tail -n 1)
    if ((rc == 0)) && [[ -z "$repro" ]]; then
        printf 'fuzz_%s: %s executions in %s s (%s/s), corpus %s inputs, no crash\n' "$t" \
            "${execs:-?}" "$secs" "$(( ${execs:-0} / secs ))" "$(find "$corpus" -type f | wc -l)"
        continue
    fi
    failed=1
    printf 'fuzz_%s: FAILED (exit %d) after %s executions; reproducer: %s\n' "$t" "$rc" \
        "${execs:-?}" "${repro:-none, see $out/log}"
    # What broke: our check's message, or the sanitizer's summary.
    grep -E '^fuzz_[a-z]+:|ERROR: |SUMMARY: ' "$out/log" | head -n 8 | sed 's/^/    /' || true
    echo "    replay: $OUT/fuzz_$t ${repro:-INPUT}  (log: $out/log)"
done
exit "$failed"
