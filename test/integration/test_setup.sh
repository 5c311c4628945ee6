#!/usr/bin/env bash
# gridwire-setup against fake sysfs trees (the real thing runs on the
# emulated hosts, test_host.sh): a host needing hugepages and a NIC port
# to bind, beside a port that carries the host's own network; in --dry-run
# nothing changes and every step is reported; for real the host's port is
# refused and so nothing else is done either (no NIC bound by half, no
# pages reserved), exit 2; with the free port alone, the pages are
# reserved and the port bound through driver_override; a host without
# IOMMU groups is refused with what to enable. And on this machine itself,
# in --dry-run, the shipped gateway-host config is refused for lack of an
# IOMMU, the default one (no PCI, no hugepages) passes.
# gw-timeout: 120
# gw-lane: apart
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/lib.sh"
ROOT=$(gw_root)
SETUP=$ROOT/app/gridwire-setup/gridwire-setup
gw_workdir setup
fail=0
expect() { # description rc-wanted file-with-output pattern...
    local what=$1 want=$2 out=$3 rc
    shift 3
    rc=$(cat "$out.rc")
    local ok=1
    [[ $rc == "$want" ]] || ok=0
    for p in "$@"; do grep -Eq "$p" "$out" || ok=0; done
    if ((ok)); then echo "ok: $what"; else echo "FAIL: $what (exit $rc): $(cat "$out")"; fail=1; fi
}
run() { # out args...
    local out=$1
    shift
    "$SETUP" "$@" >"$out" 2>&1 && echo 0 >"$out.rc" || echo $? >"$out.rc"
}

tree() { # ROOT: a host with an IOMMU, 2 MB pages, two NIC ports (eth9, eth0)
    local r=$1 a
    mkdir -p "$r/sys/kernel/mm/hugepages/hugepages-2048kB" "$r/sys/bus/pci/drivers/vfio-pci" \
        "$r/sys/bus/pci/drivers/ixgbe"
    echo 0 >"$r/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages"
    echo 0 >"$r/sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages"
    : >"$r/sys/bus/pci/drivers/ixgbe/unbind"
    : >"$r/sys/bus/pci/drivers_probe"
    for a in 0000:03:00.0:7:eth9 0000:03:00.1:8:eth0; do
        local addr=${a%:*:*} rest=${a#*.?:} grp iface
        grp=${rest%%:*} iface=${rest#*:}
        # eth0's NIC is a virtio one: its interface hangs off the virtio device.
        local netdir=$r/sys/bus/pci/devices/$addr/net/$iface
        [[ $iface == eth0 ]] && netdir=$r/sys/bus/pci/devices/$addr/virtio1/net/$iface
        mkdir -p "$r/sys/kernel/iommu_groups/$grp/devices" "$netdir"
        ln -s "../../../kernel/iommu_groups/$grp" "$r/sys/bus/pci/devices/$addr/iommu_group"
        ln -s "../../../bus/pci/drivers/ixgbe" "$r/sys/bus/pci/devices/$addr/driver"
        : >"$r/sys/bus/pci/devices/$addr/driver_override"
        touch "$r/sys/kernel/iommu_groups/$grp/devices/$addr"
    done
}
# eth0 carries the host's network: an address and a route.
echo '[{"ifname":"eth0","addr_info":[{"local":"10.0.0.5"}]},{"ifname":"eth9","addr_info":[]}]' >"$work/addr.json"
echo '[{"dst":"default","dev":"eth0"}]' >"$work/route.json"
export GW_SETUP_IP_ADDR=$work/addr.json GW_SETUP_IP_ROUTE=$work/route.json
printf '[eal]\nargs = -l 0-2 -m 64\n[port]\nmembers = pci:0000:03:00.0, pci:0000:03:00.1\n' >"$work/two.ini"
printf '[eal]\nargs = -l 0-2 -m 64\n[port]\nmembers = pci:0000:03:00.0\n' >"$work/one.ini"

tree "$work/dry"
run "$work/dry.out" -c "$work/two.ini" --dry-run --sysfs "$work/dry"
expect "dry run: the refusal, and what it holds back" 2 "$work/dry.out" \
    "^held +hugepages: reserve 32 pages of 2 MB" "^held +0000:03:00.0: bind to vfio-pci \(from ixgbe" \
    "^refuse +0000:03:00.1: carries the host's network \(eth0"
if [[ $(cat "$work/dry/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages") == 0 &&
    ! -s "$work/dry/sys/bus/pci/devices/0000:03:00.0/driver_override" ]]; then
    echo "ok: dry run: nothing written"
else
    echo "FAIL: dry run: wrote into the tree"; fail=1
fi

tree "$work/real"
run "$work/real.out" -c "$work/two.ini" --sysfs "$work/real"
expect "for real, with the host's port: refused, nothing done" 2 "$work/real.out" \
    "^held +hugepages: reserve 32" "^held +0000:03:00.0: bind to vfio-pci" "^refuse +0000:03:00.1"
s=$work/real/sys
if [[ $(cat "$s/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages") == 0 &&
    ! -s "$s/bus/pci/devices/0000:03:00.0/driver_override" && ! -s "$s/bus/pci/drivers/ixgbe/unbind" &&
    ! -s "$s/bus/pci/devices/0000:03:00.1/driver_override" ]]; then
    echo "ok: for real, refused: no page reserved, no port bound by half"
else
    echo "FAIL: for real, refused: the tree was changed"; fail=1
fi

tree "$work/one"
run "$work/one.out" -c "$work/one.ini" --sysfs "$work/one"
expect "one free port: ready, exit 0" 0 "$work/one.out" "^do +hugepages: reserve 32" "^do +0000:03:00.0: bind"
s=$work/one/sys
if [[ $(cat "$s/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages") == 32 &&
    $(cat "$s/bus/pci/devices/0000:03:00.0/driver_override") == vfio-pci &&
    $(cat "$s/bus/pci/drivers/ixgbe/unbind") == 0000:03:00.0 &&
    $(cat "$s/bus/pci/drivers_probe") == 0000:03:00.0 ]]; then
    echo "ok: for real: pages reserved, 03:00.0 bound through driver_override"
else
    echo "FAIL: for real: the tree is not as it should be"; fail=1
fi

tree "$work/noiommu"
rm -rf "$work/noiommu/sys/kernel/iommu_groups"/*
run "$work/noiommu.out" -c "$work/one.ini" --dry-run --sysfs "$work/noiommu"
expect "no IOMMU groups: refused, with what to enable" 2 "$work/noiommu.out" \
    "^refuse +IOMMU: no groups .*intel_iommu=on"

unset GW_SETUP_IP_ADDR GW_SETUP_IP_ROUTE
run "$work/host.out" -c "$ROOT/config/gateway-host.ini" --dry-run
expect "this machine, the gateway-host config: refused (no IOMMU here)" 2 "$work/host.out" "^refuse +IOMMU"
run "$work/default.out" -c "$ROOT/config/gridwire.ini" --dry-run
expect "this machine, the default config: nothing to do" 0 "$work/default.out" "^ok +hugepages: not used"
run "$work/bad.out" -c "$work/no-such.ini" --dry-run
expect "a config that is not there: one line, exit 2" 2 "$work/bad.out" "cannot read .*no-such.ini"
exit $fail
