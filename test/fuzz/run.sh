#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# Build the libFuzzer targets with clang straight from the sources (the
# project itself is built with gcc) and run each for SECONDS (default 20).
# One line per target; exit 1 if a target found a crash (or hang, or leak),
# with the path of the input that reproduces it.
#
#   test/fuzz/run.sh [SECONDS] [TARGET...]    TARGET: wire, lane, auth (default all)
#
# Everything goes under $GW_FUZZ_DIR (default build/): the binaries
# fuzz_wire and fuzz_lane, the corpora fuzz-corpus/<target> (kept between
# runs, so longer runs build on shorter ones; seeded with the frames and
# scripts written below and test/fuzz/seeds/<target>), and fuzz-out/<target>
# with the last log and any reproducer. To replay one:
#
#   build/fuzz_lane build/fuzz-out/lane/crash-...   (FZ_TRACE=1: every operation)
set -euo pipefail

ROOT="$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.." && pwd -P)"
cd "$ROOT"

secs=${1:-20}
(($# > 0)) && shift
[[ "$secs" =~ ^[0-9]+$ && "$secs" -gt 0 ]] || { echo "usage: $0 [SECONDS] [wire|lane|auth]..." >&2; exit 2; }
targets=("$@")
((${#targets[@]})) || targets=(wire lane auth)
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
CFLAGS=(-std=gnu11 -g -O1 -march=corei7 -Wall -Wextra
    -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all
    -I lib/wire -I lib/proto -I lib/auth)
declare -A SRCS=(
    [wire]="lib/wire/gw_wire.c lib/wire/gw_crc32c.c"
    [lane]="lib/proto/gw_lane.c lib/wire/gw_wire.c lib/wire/gw_crc32c.c"
    [auth]="lib/auth/gw_auth.c lib/wire/gw_wire.c lib/wire/gw_crc32c.c"
)
# The AEADs' own code (assembly, not instrumented) is linked as is.
declare -A LIBS=([auth]="-lIPSec_MB -lsodium")
# Frames go up to 9014 bytes; a lane script needs no more than the default.
declare -A MAXLEN=([wire]=9216 [lane]=4096 [auth]=4200)

build() { # target
    local t=$1
    [[ -n "${SRCS[$t]:-}" ]] || die "unknown target '$t' (wire, lane, auth)"
    # shellcheck disable=SC2086  # the source and library lists are words
    clang "${CFLAGS[@]}" "test/fuzz/fuzz_$t.c" ${SRCS[$t]} ${LIBS[$t]:-} -o "$OUT/fuzz_$t.tmp" ||
        die "cannot build fuzz_$t"
    mv -f "$OUT/fuzz_$t.tmp" "$OUT/fuzz_$t"
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
for name, b in seeds.items():
    with open(os.path.join(d, 'seed-' + name), 'wb') as f:
        f.write(b)
PY
}

failed=0
for t in "${targets[@]}"; do
    build "$t"
    corpus="$OUT/fuzz-corpus/$t"
    out="$OUT/fuzz-out/$t"
    mkdir -p "$corpus" "$out"
    seed "$t" "$corpus"
    rm -f "$out"/crash-* "$out"/timeout-* "$out"/leak-* "$out"/oom-*
    seeds=()
    [[ -d "test/fuzz/seeds/$t" ]] && seeds=("test/fuzz/seeds/$t")
    # New inputs go to the first directory; the committed seeds stay as they are.
    set +e
    ASAN_OPTIONS=${ASAN_OPTIONS:-quarantine_size_mb=64} \
        "$OUT/fuzz_$t" -max_total_time="$secs" -timeout=5 -max_len="${MAXLEN[$t]}" \
        -print_final_stats=1 -artifact_prefix="$out/" "$corpus" "${seeds[@]}" \
        >"$out/log" 2>&1
    rc=$?
    set -e
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$out/log" | tail -n 1)
    repro=$(sed -n 's/.*Test unit written to //p' "$out/log" | tail -n 1)
    if ((rc == 0)) && [[ -z "$repro" ]]; then
        printf 'fuzz_%s: %s executions in %s s (%s/s), no crash\n' "$t" "${execs:-?}" "$secs" \
            "$(( ${execs:-0} / secs ))"
        continue
    fi
    failed=1
    printf 'fuzz_%s: FAILED (exit %d) after %s executions; reproducer: %s\n' "$t" "$rc" \
        "${execs:-?}" "${repro:-none, see $out/log}"
    # What broke: our check's message, or the sanitizer's summary.
    grep -E '^fuzz_(wire|lane):|ERROR: |SUMMARY: ' "$out/log" | head -n 8 | sed 's/^/    /' || true
    echo "    replay: $OUT/fuzz_$t ${repro:-INPUT}  (log: $out/log)"
done
exit "$failed"
