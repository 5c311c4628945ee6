#!/usr/bin/env bash
# The demo: two gateways in two namespaces over a bonded pair of veths
# (bond mode 4, MTU 9000), 4 client processes with 1,000 senders between
# them sending 225-byte messages to a verifying receiver on the other host.
# Extra arguments go to scripts/pair.sh (e.g. --msgs 5000, --batch off).
set -euo pipefail
here=$(dirname "${BASH_SOURCE[0]}")
echo "gridwire demo: alpha (gwa) --bond of 2 veths, MTU 9000--> beta (gwb)" >&2
exec "$here/../../scripts/pair.sh" --procs 4 --writers 250 --msgs 2000 "$@"
