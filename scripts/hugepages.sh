#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# A pool of 2 MB hugepages for gateways that run as DPDK multi-process
# primaries (so that dpdk-proc-info and dpdk-dumpcap can attach to them).
# Gateways run without hugepages by default (--no-huge): this is optional.
#
#   hugepages.sh reserve [MB]  reserve MB of 2 MB pages (default 2048) and
#                              mount hugetlbfs on /dev/hugepages if nothing is
#   hugepages.sh release       remove what gateways left there, give the pages
#                              back and unmount what reserve mounted
#   hugepages.sh status        pages reserved and free, and the mount
#
# What reserve changed is kept in /run/gridwire/hugepages.state, so release
# restores the machine as it was.
set -euo pipefail

DIR=/dev/hugepages
STATE=/run/gridwire/hugepages.state
NR=/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages
FREE=/sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages

log() { printf 'hugepages: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

need_root() {
    [[ $EUID -eq 0 ]] || die "must run as root"
    [[ -w $NR ]] || die "this kernel offers no 2 MB hugepages ($NR is missing)"
}

mounted() { awk -v d="$DIR" '$2 == d && $3 == "hugetlbfs" { f = 1 } END { exit !f }' /proc/mounts; }

# Does a process map a page file of ours?
in_use() { grep -qs " $DIR/" /proc/[0-9]*/maps; }

cmd_reserve() {
    local mb=${1:-2048} pages got
    [[ $mb =~ ^[0-9]+$ ]] && ((mb >= 2)) || die "reserve: MB must be a number of megabytes, at least 2"
    need_root
    pages=$((mb / 2))
    mkdir -p "${STATE%/*}"
    [[ -f $STATE ]] || printf 'nr=%s mounted=0\n' "$(cat "$NR")" >"$STATE"
    if (($(cat "$NR") < pages)); then
        echo "$pages" >"$NR"
    fi
    got=$(cat "$NR")
    ((got >= pages)) ||
        die "asked the kernel for $pages pages of 2 MB, it gave $got (memory too fragmented? try fewer, or hugepages= on the kernel command line)"
    if ! mounted; then
        mkdir -p "$DIR"
        mount -t hugetlbfs -o pagesize=2M nodev "$DIR"
        sed -i 's/mounted=0/mounted=1/' "$STATE"
    fi
    log "$got pages of 2 MB reserved ($(cat "$FREE") free), hugetlbfs on $DIR"
}

cmd_release() {
    need_root
    local i
    for ((i = 0; i < 30; i++)); do # a gateway just killed takes a moment to go
        in_use || break
        sleep 0.1
    done
    in_use && die "release: processes still map pages of $DIR (gateways running?); stop them first"
    # A primary's page files stay after it exits (secondaries need them
    # while it runs): gateways name theirs after their prefix, gw-NAME.
    if mounted; then
        rm -f "$DIR"/gw-*map_*
    fi
    local nr was
    if [[ -f $STATE ]]; then # else reserve did not run: the pages are not ours
        read -r nr was < <(sed 's/nr=\([0-9]*\) mounted=\([01]\)/\1 \2/' "$STATE")
        if ((was)) && mounted; then
            umount "$DIR" || die "release: cannot unmount $DIR; nothing changed"
        fi
        echo "$nr" >"$NR"
        rm -f "$STATE"
    fi
    log "released: $(cat "$NR") pages of 2 MB reserved now"
}

cmd_status() {
    [[ -r $NR ]] || die "this kernel offers no 2 MB hugepages"
    printf 'pages of 2 MB: %s reserved, %s free\n' "$(cat "$NR")" "$(cat "$FREE")"
    if mounted; then printf 'hugetlbfs on %s\n' "$DIR"; else printf 'no hugetlbfs on %s\n' "$DIR"; fi
}

case ${1:-} in
reserve) shift; cmd_reserve "$@" ;;
release) cmd_release ;;
status) cmd_status ;;
-h | --help | help | "") sed -n '4,14p' "$0" | sed 's/^# \{0,1\}//' ;;
*) die "unknown command '$1' (valid: reserve release status)" ;;
esac
