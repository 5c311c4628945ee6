#!/usr/bin/env bash
# The demo: two gateways in two namespaces joined by the kernel-bypass
# cable (two vhost-user <-> virtio-user links in shared memory, bonded in
# mode 4, MTU 9000; --link veth for the two veths through the kernel), 4
# client processes with 1,000 senders between them sending 225-byte
# messages to a verifying receiver on the other host. Extra arguments go
# to scripts/pair.sh (e.g. --msgs 5000, --batch off, --link veth).
set -euo pipefail
here=$(dirname "${BASH_SOURCE[0]}")
link=cable
for ((i = 1; i <= $#; i++)); do [[ ${!i} == --link ]] && { j=$((i + 1)); link=${!j}; }; done
if [[ $link == veth ]]; then
    echo "gridwire demo: alpha (gwa) --bond of 2 veths through the kernel, MTU 9000--> beta (gwb)" >&2
else
    echo "gridwire demo: alpha (gwa) --kernel-bypass cable: bond of 2 vhost-user/virtio-user links, MTU 9000--> beta (gwb)" >&2
fi
exec "$here/../../scripts/pair.sh" --procs 4 --writers 250 --msgs 2000 "$@"
