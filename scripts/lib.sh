# shellcheck shell=bash
# SPDX-License-Identifier: BSD-3-Clause
#
# Shared shell helpers for gridwire scripts and integration tests.
# Source it, do not execute it:
#
#   . "$(dirname "$0")/../../scripts/lib.sh"
#   gw_ns_up                      # namespaces up; torn down again on exit
#   gw_cleanup_push kill "$pid"   # runs on EXIT/INT/TERM, last pushed first
#
# Functions:
#   gw_root              print the repository root
#   gw_log MSG...        timestamped message on stderr
#   gw_die MSG...        gw_log, then exit 1 (cleanup handlers still run)
#   gw_cleanup_push CMD [ARG...]
#                        register a cleanup command; all registered commands
#                        run in reverse order on EXIT, INT or TERM (once)
#   gw_cleanup_run       run (and forget) the registered commands now
#   gw_ns_up [N]         scripts/netns.sh up [N], and register gw_ns_down
#   gw_ns_down           scripts/netns.sh down
#   gw_netns ARGS...     scripts/netns.sh ARGS...
#
# Installing the cleanup trap replaces any EXIT/INT/TERM trap the caller set
# before; register further work with gw_cleanup_push rather than with trap.

if [[ -n "${_GW_LIB_SOURCED:-}" ]]; then
    return 0
fi
_GW_LIB_SOURCED=1

_GW_LIB_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"

gw_root() {
    printf '%s\n' "$_GW_LIB_ROOT"
}

# gw_pss PID: its proportional set size in kB (a page shared by N processes
# counts 1/N in each, so the two gateways' shared cable buffers count once).
gw_pss() {
    awk '/^Pss:/ {print $2}' "/proc/$1/smaps_rollup"
}

gw_log() {
    printf '%s %s\n' "$(date '+%H:%M:%S.%3N')" "$*" >&2
}

gw_die() {
    gw_log "FATAL: $*"
    exit 1
}

# Cleanup stack: each entry is one command, stored as a %q-quoted string.
_GW_CLEANUP=()
_GW_TRAP_SET=

gw_cleanup_push() {
    (($# > 0)) || gw_die "gw_cleanup_push: no command"
    local q
    q="$(printf '%q ' "$@")"
    _GW_CLEANUP+=("$q")
    if [[ -z "$_GW_TRAP_SET" ]]; then
        trap '_gw_on_exit' EXIT
        trap '_gw_on_signal 130' INT
        trap '_gw_on_signal 143' TERM
        _GW_TRAP_SET=1
    fi
}

gw_cleanup_run() {
    local i cmd
    for ((i = ${#_GW_CLEANUP[@]} - 1; i >= 0; i--)); do
        cmd="${_GW_CLEANUP[i]}"
        unset '_GW_CLEANUP[i]'
        # A failing cleanup step must not stop the others (nor trip set -e).
        eval "$cmd" || gw_log "cleanup step failed ($?): $cmd"
    done
    _GW_CLEANUP=()
}

_gw_on_exit() {
    local rc=$?
    _GW_EXIT_RC=$rc
    trap - EXIT
    set +e
    gw_cleanup_run
    exit "$rc"
}

_gw_on_signal() {
    local rc=$1
    _GW_EXIT_RC=$rc
    trap - EXIT INT TERM
    set +e
    gw_log "interrupted, cleaning up"
    gw_cleanup_run
    exit "$rc"
}

gw_netns() {
    "$_GW_LIB_ROOT/scripts/netns.sh" "$@"
}

gw_ns_up() {
    # Register first: a half-built setup is torn down as well.
    gw_cleanup_push gw_ns_down
    gw_netns up "$@"
}

gw_ns_down() {
    gw_netns down
}

# --- two gateways on the test network -------------------------------------
# alpha (node 1) in $GW_NS_A on CPU 0, beta (node 2) in $GW_NS_B on CPU 1,
# configured by config/demo-a.ini and demo-b.ini. Logs and counters go to
# WORK/alpha.{log,json} and WORK/beta.{log,json}.
#
# GW_LINK chooses what joins them: "cable" (the default: the kernel-bypass
# cable of the shipped demo files, two vhost-user <-> virtio-user links in
# shared memory, bonded) or "veth" (the two veths between the namespaces,
# through af_packet, bonded, where XDP can drop frames and ip link can cut
# a member). GW_ARGS_A and GW_ARGS_B add gridwired arguments for one side
# only, e.g. GW_ARGS_B="--set fault.drop_ppm=10000". GW_HUGE=1 runs the
# gateways on hugepages (./scripts/gw hugepages reserve) as multi-process
# primaries, which dpdk-proc-info and dpdk-dumpcap attach to; the default
# is --no-huge.

gw_link() {
    case ${GW_LINK:-cable} in
    cable | veth) echo "${GW_LINK:-cable}" ;;
    *) gw_die "GW_LINK must be cable or veth, not '$GW_LINK'" ;;
    esac
}

# gw_alive PID: PID runs. A process that has exited but is not reaped yet
# (a zombie) does not: a gateway started in a command substitution is
# reparented to init, which here reaps only every 2 s or so, and kill -0
# alone would wait for that after every stop.
gw_alive() {
    local st
    read -r st 2>/dev/null <"/proc/$1/stat" || return 1
    st=${st##*) }
    [[ ${st%% *} != Z ]]
}

_gw_stop_pid() {
    kill -9 "$1" 2>/dev/null || true
    # Reap our own child here, so bash does not report it "Killed".
    { wait "$1"; } 2>/dev/null || true
}

# A gateway a test left running (it failed before gw_gateways_down): SIGINT
# first, so that it writes its counters (--stats-file) for the failed
# run's story, then SIGKILL after 5 s.
_gw_stop_gateway() {
    kill -INT "$1" 2>/dev/null || return 0
    for _ in $(seq 50); do
        gw_alive "$1" || break
        sleep 0.1
    done
    _gw_stop_pid "$1"
}

# gw_gateways_up WORK [gridwired args...]: start both, wait until they see
# each other (bond mode 4 takes about 3 s). Sets GW_PID_A and GW_PID_B.
# GW_WORKERS=N and GW_RECEIVERS=R give each gateway N worker and R receiver
# lcores besides its main one.
# gw_gateway_start WORK 0|1 [gridwired args...]: start alpha (0) or beta
# (1) in its namespace; prints its pid. Its log goes to WORK/NAME.log
# (appended, so a restart keeps the first instance's lines).
gw_gateway_start() {
    local work=$1 i=$2 bin=$_GW_LIB_ROOT/build/app/gridwired link
    shift 2
    link=$(gw_link) || return 1
    local ns=(gwa gwb) name=(alpha beta) cfg=(demo-a.ini demo-b.ini) side=(a b)
    local workers=${GW_WORKERS:-0} receivers=${GW_RECEIVERS:-0} lcores="" k extra=()
    # Main lcore of alpha on CPU 0, of beta on CPU 1; the others alternate.
    for k in $(seq 0 $((workers + receivers))); do lcores+="${lcores:+,}$k@$(((i + k) % 2))"; done
    [[ $link == veth ]] && extra+=(--set "port.members=veth-${side[i]}0,veth-${side[i]}1")
    local own
    own=$([[ $i == 0 ]] && echo "${GW_ARGS_A:-}" || echo "${GW_ARGS_B:-}")
    # shellcheck disable=SC2206  # plain words, split on purpose
    extra+=($own)
    local mem="--no-huge -m 512 --no-shconf"
    # One file per memory segment list: a vhost-user peer maps at most 8.
    [[ ${GW_HUGE:-0} == 1 ]] && mem="-m 512 --huge-dir=/dev/hugepages --single-file-segments"
    rm -f "/run/gridwire/${name[i]}.sock"
    ip netns exec "${ns[i]}" "$bin" -c "$_GW_LIB_ROOT/config/${cfg[i]}" \
        --set "eal.args=--no-pci $mem --lcores=$lcores" \
        --set "lcores.workers=$workers" --set "lcores.receivers=$receivers" \
        --stats-file "$work/${name[i]}.json" "${extra[@]}" "$@" >>"$work/${name[i]}.log" 2>&1 &
    echo $!
}

# gw_peer_up LOG: the gateway of LOG has seen a peer come up.
gw_peer_up() {
    grep -q "peer [0-9]* (.*) is up" "$1"
}

gw_gateways_up() {
    local work=$1 i
    shift
    local p left
    for i in gwa gwb; do
        # Captures (tshark, dumpcap, and test/integration/inject.py's
        # gw-capture) may watch the namespace; nothing else.
        left=""
        for p in $(ip netns pids "$i" 2>/dev/null); do
            [[ " tshark dumpcap gw-capture " == *" $(cat "/proc/$p/comm" 2>/dev/null) "* ]] ||
                left+=" $p"
        done
        [[ -z $left ]] ||
            gw_die "processes still run in namespace $i:$left: stop them first (gw_gateways_down, or ./scripts/gw netns down)"
    done
    : >"$work/alpha.log"
    : >"$work/beta.log"
    # Beta first: on the cable it owns the sockets alpha connects to.
    GW_PID_B=$(gw_gateway_start "$work" 1 "$@")
    gw_cleanup_push _gw_stop_gateway "$GW_PID_B"
    GW_PID_A=$(gw_gateway_start "$work" 0 "$@")
    gw_cleanup_push _gw_stop_gateway "$GW_PID_A"
    for _ in $(seq 300); do
        gw_peer_up "$work/alpha.log" && gw_peer_up "$work/beta.log" && return 0
        if ! gw_alive "$GW_PID_A" || ! gw_alive "$GW_PID_B"; then
            cat "$work/alpha.log" "$work/beta.log" >&2
            gw_die "a gateway did not start"
        fi
        sleep 0.1
    done
    cat "$work/alpha.log" "$work/beta.log" >&2
    gw_die "the gateways did not find each other in 30 s"
}

# gw_restart_alpha WORK: kill alpha's gateway (pid in WORK/alpha.pid,
# rewritten), start it again past beta's peer timeout, and wait until it
# sees beta again: the binding suites' gateway-killed case calls it back.
gw_restart_alpha() {
    local work=$1 ups
    ups=$(grep -c "peer 2 (beta) is up" "$work/alpha.log")
    kill -9 "$(cat "$work/alpha.pid")"
    sleep 1.5 # past peer_timeout_ms: beta declares alpha down
    gw_gateway_start "$work" 0 >"$work/alpha.pid"
    for _ in $(seq 300); do
        (($(grep -c "peer 2 (beta) is up" "$work/alpha.log") > ups)) && return 0
        sleep 0.1
    done
    return 1
}

# gw_gateways_down: SIGINT (flush, report, write counters), wait for exit.
gw_gateways_down() {
    kill -INT "$GW_PID_A" "$GW_PID_B" 2>/dev/null || true
    for _ in $(seq 100); do
        gw_alive "$GW_PID_A" || gw_alive "$GW_PID_B" || return 0
        sleep 0.1
    done
    gw_log "a gateway did not stop in 10 s"
}

# gw_rx_start WORK NAME gw-perf-rx-args...: a receiver in beta's namespace,
# started and registered. Output in WORK/NAME.json and WORK/NAME.err; sets GW_PID_RX.
gw_rx_start() {
    local work=$1 name=$2
    shift 2
    ip netns exec gwb ${GW_PIN_B:+taskset -c "$GW_PIN_B"} "$_GW_LIB_ROOT/build/app/gw-perf" rx -s /run/gridwire/beta.sock "$@" \
        >"$work/$name.json" 2>"$work/$name.err" &
    GW_PID_RX=$!
    gw_cleanup_push _gw_stop_pid "$GW_PID_RX"
    gw_wait_ready "$work/$name.err" "rx ready" "$GW_PID_RX" "receiver $name"
}

# gw_wait_ready FILE TEXT PID WHAT: until FILE says TEXT (up to 30 s); dies,
# showing FILE, if PID ends first or the time runs out.
gw_wait_ready() {
    local file=$1 text=$2 pid=$3 what=$4
    for _ in $(seq 300); do
        grep -q "$text" "$file" 2>/dev/null && return 0
        kill -0 "$pid" 2>/dev/null || { cat "$file" >&2; gw_die "$what did not start"; }
        sleep 0.1
    done
    gw_die "$what did not start in 30 s"
}

# gw_ledger_run WORK WRITERS MSGS RATE [gw-perf-rx-args...]: a run that
# accounts for every message: WRITERS writers on alpha send MSGS each at
# RATE msg/s to beta's endpoint sink, trying again while beta is down; the
# receiver keeps what it got (WORK/received.bits), the sender what it was
# told failed (WORK/rejected.bits); their JSON in WORK/rx.json and
# WORK/tx.json. The receiver ends once every message is in one ledger or
# the other (the sender's appears when it ends), or after 20 s without a
# message. Returns once both run; sets GW_PID_RX and GW_PID_TX. With
# GW_URGENT_EVERY=K, writers w with w % K == 0 send urgent messages (and
# the receiver checks each writer's class).
gw_ledger_run() {
    local work=$1 writers=$2 msgs=$3 rate=$4
    shift 4
    local classes=(${GW_URGENT_EVERY:+--urgent-every "$GW_URGENT_EVERY"})
    rm -f "$work/received.bits" "$work/rejected.bits"
    gw_rx_start "$work" rx -e sink --expect $((writers * msgs)) --writers-max "$writers" -m "$msgs" \
        --ledger "$work/received.bits" --settled-by "$work/rejected.bits" --idle-timeout 20 \
        "${classes[@]}" "$@"
    ip netns exec gwa "$_GW_LIB_ROOT/build/app/gw-perf" tx -s /run/gridwire/alpha.sock -n 2 -e sink \
        -w "$writers" -m "$msgs" --rate "$rate" --retry-unreachable --ledger "$work/rejected.bits" \
        --linger-ms 3000 "${classes[@]}" >"$work/tx.json" 2>"$work/tx.err" &
    GW_PID_TX=$!
    gw_cleanup_push _gw_stop_pid "$GW_PID_TX"
}

# gw_ledger_count WORK TOTAL: "MISSING BOTH" from gw_ledger_run's ledgers:
# messages neither received nor reported to their sender (lost in
# silence), and those both (reported, yet received: in flight at a cut).
gw_ledger_count() {
    python3 - "$1" "$2" <<'PY'
import sys
work, total = sys.argv[1], int(sys.argv[2])
got = open(f"{work}/received.bits", "rb").read()
rej = open(f"{work}/rejected.bits", "rb").read()
missing = sum(bin(~(g | r) & 0xFF).count("1") for g, r in zip(got, rej)) - (len(got) * 8 - total)
print(missing, sum(bin(g & r).count("1") for g, r in zip(got, rej)))
PY
}

# gw_member LINK N down|up: alpha's member N lost or back: on the veths
# from outside (ip link: both kernels see the carrier go), on the cable,
# which has no kernel interface, by the operator's command (gwctl member:
# alpha's end unplugged, beta's end sees its connection go).
gw_member() {
    if [[ $1 == veth ]]; then
        ip netns exec gwa ip link set "veth-a$2" "$3"
    else
        "$_GW_LIB_ROOT/app/gwctl/gwctl" -n alpha member "$2" "$3" >/dev/null
    fi
}

# gw_port_field NODE KEY: a field of the gateway's /gridwire/port.
gw_port_field() {
    "$_GW_LIB_ROOT/app/gwctl/gwctl" -n "$1" raw /gridwire/port |
        python3 -c "import json, sys; print(json.load(sys.stdin)['$2'])"
}

# gw_stat NODE KEY: a counter of the gateway's /gridwire/stats, 0 while it
# does not answer (starting, or too busy to).
gw_stat() {
    "$_GW_LIB_ROOT/app/gwctl/gwctl" -n "$1" raw /gridwire/stats 2>/dev/null |
        python3 -c "import json, sys; print(json.load(sys.stdin).get('$2', 0))" 2>/dev/null || echo 0
}

# gw_topic_nodes NODE TOPIC: the peers the gateway knows subscribe to TOPIC
# ("2,3"; "-": none), empty when it knows no such topic.
gw_topic_nodes() {
    local id
    for id in $("$_GW_LIB_ROOT/app/gwctl/gwctl" -n "$1" raw /gridwire/topics 2>/dev/null | tr -d '[],'); do
        "$_GW_LIB_ROOT/app/gwctl/gwctl" -n "$1" raw "/gridwire/topic,$id" 2>/dev/null |
            python3 -c "import json, sys; t = json.load(sys.stdin); t['topic'] == '$2' and print(t['nodes'])" \
                2>/dev/null || true
    done
}

# gw_pair_bg OUT pair.sh-args...: a verified run (scripts/pair.sh, on the
# namespaces already up) in the background, returning once its senders
# have started. Output in OUT; sets GW_PID_PAIR.
gw_pair_bg() {
    local out=$1
    shift
    "$_GW_LIB_ROOT/scripts/pair.sh" --keep-ns "$@" >"$out" 2>&1 &
    GW_PID_PAIR=$!
    gw_cleanup_push _gw_stop_pid "$GW_PID_PAIR"
    gw_wait_ready "$out" "pair: .* processes" "$GW_PID_PAIR" "the run"
}

# gw_captured_run WORK pair.sh-args...: tshark on both sides' veths (each
# side's own frames are seen at the other: af_packet sends past the kernel's
# taps) into WORK/beta.pcap and WORK/alpha.pcap (pcapng: two interfaces),
# started before a verified run so that they see it from its first frame;
# returns when the run and the captures have ended. The run's output is in
# WORK/pair.out.
gw_captured_run() {
    local work=$1 cap_b cap_a
    shift
    ip netns exec gwb tshark -q -B 128 -i veth-b0 -i veth-b1 -w "$work/beta.pcap" \
        >"$work/tshark-b.out" 2>&1 &
    cap_b=$!
    ip netns exec gwa tshark -q -B 64 -i veth-a0 -i veth-a1 -w "$work/alpha.pcap" \
        >"$work/tshark-a.out" 2>&1 &
    cap_a=$!
    gw_cleanup_push _gw_stop_pid "$cap_b"
    gw_cleanup_push _gw_stop_pid "$cap_a"
    gw_wait_ready "$work/tshark-b.out" "Capture started" "$cap_b" "tshark on beta's veths"
    gw_wait_ready "$work/tshark-a.out" "Capture started" "$cap_a" "tshark on alpha's veths"
    gw_pair_bg "$work/pair.out" "$@"
    wait "$GW_PID_PAIR" || true
    sleep 1 # the last ACKs and hellos
    kill -INT "$cap_b" "$cap_a"
    wait "$cap_b" "$cap_a" 2>/dev/null || true
}

# gw_workdir NAME: set $work to a fresh /tmp/gridwire-NAME.XXXXXX, removed
# on exit unless GW_KEEP is set (then its path is logged, for a post-mortem).
# Under ./scripts/gw test (GW_WORK_ROOT set) the folder goes inside the
# test's own one, which the runner deletes when the test passes and keeps,
# naming it, when it fails. Run alone, a test keeps its folder when it
# fails (or with GW_KEEP=1) and says where.
gw_workdir() {
    if [[ -n "${GW_WORK_ROOT:-}" ]]; then
        work=$(mktemp -d "$GW_WORK_ROOT/$1.XXXXXX")
    else
        work=$(mktemp -d "/tmp/gridwire-$1.XXXXXX")
        gw_cleanup_push _gw_workdir_end "$work"
    fi
}

_gw_workdir_end() {
    if [[ -n "${GW_KEEP:-}" || ${_GW_EXIT_RC:-0} != 0 ]]; then
        gw_log "kept $1 (logs and counters of this run)"
    else
        rm -rf "$1"
    fi
}

# --- a mesh of gateways (scripts/mesh.sh) ---------------------------------
# Node k (1..N) is "nK" in namespace gwmK with socket /run/gridwire/nK.sock,
# configured by config/mesh.ini; its main lcore runs on CPU (k % 2). Logs
# and counters go to WORK/nK.{log,json}. GW_MESH_PID[k] is its pid. The
# nodes listed in GW_MESH_POOLED (e.g. "2 4") run 2 workers and 2
# receivers; the others every role on their main lcore.

declare -a GW_MESH_PID=()

# gw_mesh_start WORK K [gridwired args...]: start node K; prints nothing.
gw_mesh_start() {
    local work=$1 k=$2 lcores layout=()
    shift 2
    rm -f "/run/gridwire/n$k.sock"
    lcores="0@$((k % 2))"
    if [[ " ${GW_MESH_POOLED:-} " == *" $k "* ]]; then
        lcores+=",1@$(((k + 1) % 2)),2@$((k % 2)),3@$(((k + 1) % 2)),4@$((k % 2))"
        layout=(--set lcores.workers=2 --set lcores.receivers=2)
    fi
    ip netns exec "gwm$k" "$_GW_LIB_ROOT/build/app/gridwired" -c "$_GW_LIB_ROOT/config/mesh.ini" \
        --set "node.id=$k" --set "node.name=n$k" --set "node.socket=/run/gridwire/n$k.sock" \
        --set "eal.args=--no-pci --no-huge -m 512 --no-shconf --lcores=$lcores" "${layout[@]}" \
        --stats-file "$work/n$k.json" "$@" >>"$work/n$k.log" 2>&1 &
    GW_MESH_PID[k]=$!
    gw_cleanup_push _gw_stop_gateway "${GW_MESH_PID[k]}"
}

# gw_mesh_up WORK N [gridwired args...]: namespaces, N gateways, and a wait
# until every one has seen all the others come up.
gw_mesh_up() {
    local work=$1 n=$2 k
    shift 2
    gw_cleanup_push "$_GW_LIB_ROOT/scripts/mesh.sh" down
    "$_GW_LIB_ROOT/scripts/mesh.sh" up "$n"
    for ((k = 1; k <= n; k++)); do
        : >"$work/n$k.log"
        gw_mesh_start "$work" "$k" "$@"
    done
    gw_mesh_wait "$work" "$n" $((n - 1))
}

# gw_mesh_wait WORK N UPS: until each node's log has seen UPS peers come up.
gw_mesh_wait() {
    local work=$1 n=$2 ups=$3 k ok
    for _ in $(seq 300); do
        ok=1
        for ((k = 1; k <= n; k++)); do
            (($(grep -c "peer [0-9]* (.*) is up" "$work/n$k.log") >= ups)) || ok=0
        done
        ((ok)) && return 0
        sleep 0.1
    done
    tail -n 5 "$work"/n*.log >&2
    gw_die "the mesh did not come up in 30 s"
}

# gw_rate_bps RATE: a tc rate ("400mbit", "1gbit") in bits a second; dies
# naming the value otherwise.
gw_rate_bps() {
    python3 -c "
import re, sys
m = re.fullmatch(r'(\d+)(k|m|g)?bit', sys.argv[1].lower())
print(int(m[1]) * {None: 1, 'k': 10**3, 'm': 10**6, 'g': 10**9}[m[2]]) if m else sys.exit(1)" "$1" ||
        gw_die "a rate must be a tc rate like 400mbit, not '$1'"
}

# gw_tcp_sink FILE N [per-peer]: node 1's kernel TCP sink (scripts/tcp_flows.py)
# on 10.78.0.1:47100 for N flows, its JSON to FILE; listening when this
# returns, its pid in GW_TCP_SINK_PID.
gw_tcp_sink() {
    ip netns exec gwm1 python3 "$_GW_LIB_ROOT/scripts/tcp_flows.py" sink 47100 "$2" ${3:+"$3"} >"$1" &
    GW_TCP_SINK_PID=$!
    for _ in $(seq 50); do ip netns exec gwm1 ss -ltn | grep -q ':47100 ' && return 0; sleep 0.1; done
}

# gw_mesh_shape NODE fifo|prio RATE QUEUE: the switch's two ports toward
# mesh node NODE (gwmsw's nNODEm0, nNODEm1), each shaped to RATE (a tc rate,
# "400mbit") with fresh counters. fifo: one drop-tail queue of QUEUE bytes
# ("256kb"; tbf). prio: a port that trusts DSCP, as a switch configured for
# it does: EF (46) in a queue of its own (64 KB) with a tenth of the rate
# guaranteed and the first claim on the rest (htb prio 0), everything else
# in the QUEUE one. (Debian's cloud kernels have no prio or mqprio qdisc;
# htb with priorities is strict priority within a shaped rate.)
gw_mesh_shape() {
    local node=$1 kind=$2 rate=$3 queue=$4 m dev bps t=(ip netns exec gwmsw tc)
    bps=$(gw_rate_bps "$rate")
    for m in 0 1; do
        dev=n${node}m$m
        "${t[@]}" qdisc del dev "$dev" root 2>/dev/null || true
        if [[ $kind == fifo ]]; then
            "${t[@]}" qdisc add dev "$dev" root tbf rate "$rate" burst 32kb limit "$queue"
            continue
        fi
        "${t[@]}" qdisc add dev "$dev" root handle 1: htb default 20
        "${t[@]}" class add dev "$dev" parent 1: classid 1:1 htb rate "$rate" ceil "$rate" \
            burst 32kb cburst 32kb quantum 9100
        "${t[@]}" class add dev "$dev" parent 1:1 classid 1:10 htb rate $((bps / 10))bit \
            ceil "$rate" prio 0 burst 32kb cburst 32kb quantum 9100
        "${t[@]}" class add dev "$dev" parent 1:1 classid 1:20 htb rate $((bps * 9 / 10))bit \
            ceil "$rate" prio 1 burst 32kb cburst 32kb quantum 9100
        "${t[@]}" qdisc add dev "$dev" parent 1:10 handle 10: bfifo limit 64kb
        "${t[@]}" qdisc add dev "$dev" parent 1:20 handle 20: bfifo limit "$queue"
        "${t[@]}" filter add dev "$dev" parent 1: protocol ip prio 1 u32 \
            match ip dsfield 0xb8 0xfc flowid 1:10
    done
}

# gw_mesh_drops NODE: frames the ports toward NODE dropped since they were
# shaped (the root qdisc counts its queues' drops).
gw_mesh_drops() {
    local m total=0 d
    for m in 0 1; do
        d=$(ip netns exec gwmsw tc -s qdisc show dev "n${1}m$m" |
            awk '/^qdisc .* root/ { getline; for (i = 1; i <= NF; i++) if ($i == "(dropped") { gsub(",", "", $(i+1)); print $(i+1) } }')
        total=$((total + ${d:-0}))
    done
    echo "$total"
}

# gw_check DESCRIPTION COMMAND...: run it quietly, print ok or FAIL; a
# failure sets the caller's fail=1.
gw_check() {
    if "${@:2}" >/dev/null 2>&1; then echo "ok: $1"; else echo "FAIL: $1"; fail=1; fi
}

# gw_installed_run WORK GRIDWIRED CONFIG CLIENT [LIBDIR]: start an installed
# gridwired in gwa with CONFIG (on veth-a0, no hugepages), run CLIENT (built
# from test/integration/gw_installed_client.c) against it with LIBDIR first
# on the library path, print ok or FAIL with the client's line; 0 if it
# passed. The gateway is stopped by the cleanup stack.
gw_installed_run() {
    local work=$1 bin=$2 ini=$3 client=$4 libdir=${5:-} sock=/run/gridwire/installed.sock pid
    gw_ns_up >/dev/null
    rm -f "$sock" # a killed gateway's, which would refuse the client
    ip netns exec gwa "$bin" -c "$ini" --set port.kind=single \
        --set port.members=af_packet:veth-a0 --set "node.socket=$sock" \
        --set "eal.args=--no-pci --no-huge -m 512 --no-shconf -l 0 --file-prefix=gw-installed" \
        >"$work/gridwired.log" 2>&1 &
    pid=$!
    gw_cleanup_push _gw_stop_pid "$pid"
    gw_wait_ready "$work/gridwired.log" "listening on $sock" "$pid" "the installed gridwired"
    if LD_LIBRARY_PATH=$libdir ip netns exec gwa "$client" "$sock" >"$work/client.out" 2>&1; then
        echo "ok: the installed client and gateway: $(cat "$work/client.out")"
    else
        echo "FAIL: the installed client and gateway: $(cat "$work/client.out")"
        tail -5 "$work/gridwired.log"
        return 1
    fi
}

# gw_packages_lock: this machine's installed packages are test_deb's to
# change, and the emulated hosts' root (test_host's guests read it over 9p,
# and B installs packages over it): each holds this lock while it changes
# them or must read them steadily, as both may run at once (test_host is
# apart: ./scripts/gw runs it beside the others). gw_packages_unlock, or
# the holder's end, releases it.
gw_packages_lock() {
    mkdir -p /run/lock
    exec 8>>/run/lock/gridwire-packages.lock
    flock -w 1200 8 || gw_die "another test held /run/lock/gridwire-packages.lock for 20 minutes"
}

gw_packages_unlock() {
    flock -u 8
    exec 8>&-
}

# gw_debs_build WORK: the Debian packages, built by dpkg-buildpackage from
# a copy of the tree as it is (tracked and new files alike, no build
# folder) in WORK/src, the log in WORK/build.log; the .debs land in
# WORK/src. Returns dpkg-buildpackage's status. A build of the same tree
# (same files, same contents) is kept in build/debs (the last one only):
# test_deb and test_host need the same packages, and a build takes minutes
# under load.
gw_debs_build() {
    local src=$1/src/gridwire key cache=$_GW_LIB_ROOT/build/debs
    mkdir -p "$src"
    git -C "$_GW_LIB_ROOT" ls-files -z --cached --others --exclude-standard |
        tar -C "$_GW_LIB_ROOT" --null -T - --ignore-failed-read -cf - 2>/dev/null | tar -xf - -C "$src"
    # The key: the copy as extracted (what is built: names, modes,
    # contents), and the toolchain and libraries it builds against.
    key=$({ (cd "$src" && find . -type f -printf '%m %p\n' | sort &&
        find . -type f -print0 | sort -z | xargs -0 sha256sum)
        dpkg-query -W gcc libdpdk-dev debhelper meson libsodium-dev erlang-dev python3-dev \
            dh-python 2>/dev/null; } |
        sha256sum | cut -c1-16)
    if [[ -s $cache/$key/build.log ]]; then
        cp "$cache/$key"/*.* "$1/src/" && mv "$1/src/build.log" "$1/build.log" && return 0
    fi
    (cd "$src" && dpkg-buildpackage -us -uc) >"$1/build.log" 2>&1 || return
    rm -rf "$cache" && mkdir -p "$cache/$key.part" &&
        find "$1/src" -maxdepth 1 -type f -exec cp {} "$cache/$key.part/" \; &&
        cp "$1/build.log" "$cache/$key.part/" && mv "$cache/$key.part" "$cache/$key"
}

