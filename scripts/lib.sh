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
    trap - EXIT
    set +e
    gw_cleanup_run
    exit "$rc"
}

_gw_on_signal() {
    local rc=$1
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
