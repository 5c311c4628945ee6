#!/usr/bin/env bash
# Metrics as operators watch them: Debian's Prometheus scrapes the gridwire
# exporter (gwctl exporter) during a verified run on the cable, and
# evaluates the shipped rules (config/prometheus/gridwire-rules.yml).
# - the rules pass promtool's check and their unit tests;
# - the exporter with no gateway answers gridwire_up 0, and a second one on
#   its port is one line and exit 2; with the gateways running, its text
#   passes promtool's linter and its OpenMetrics a strict parser;
# - what Prometheus stored agrees with the run: the increase it computes of
#   beta's delivered counter over the run is the run's count within its
#   extrapolation (5 %), and its last sample is at most that count and
#   within 5 % of it (the gateway stops within a scrape of the end);
# - alpha's bond member 0 taken down shows in gridwire_member_up and fires
#   GridwireMemberDown by Prometheus's own rule evaluation;
# - the exporter outlives the gateways: stopped, they are gridwire_up 0 with
#   scrape errors counted; a new run brings their values back.
# gw-timeout: 240
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/lib.sh"
ROOT=$(gw_root)
GWCTL=$ROOT/app/gwctl/gwctl
gw_workdir metrics
gw_ns_up >/dev/null
fail=0
EXP=127.0.0.1:19470 PROM=127.0.0.1:19090

gw_check "promtool check rules" promtool check rules "$ROOT/config/prometheus/gridwire-rules.yml"
gw_check "promtool test rules (every alert fires, and stays quiet, where it should)" \
    bash -c "cd '$ROOT/test/prometheus' && promtool test rules gridwire-rules.test.yml"

# The exporter, before any gateway runs here.
"$GWCTL" exporter --listen "$EXP" 2>"$work/exporter.log" &
exporter=$!
gw_cleanup_push kill "$exporter"
scrape() { curl -sf "http://$EXP/metrics"; }
for _ in $(seq 50); do scrape >/dev/null && break; sleep 0.1; done
# (A socket left behind by a gateway stopped earlier shows as that node, down.)
no_gateway() {
    curl -sf "http://$EXP/metrics" | awk '/^gridwire_up/ { n++; if ($2 != 0) up++ }
        END { exit !(n > 0 && !up) }'
}
gw_check "no gateway running: gridwire_up 0" no_gateway
set +e
"$GWCTL" exporter --listen "$EXP" >"$work/second.out" 2>&1
rc=$?
set -e
lines=$(wc -l <"$work/second.out")
if ((rc == 2 && lines == 1)); then
    echo "ok: a second exporter on the port: exit 2, one line: $(cat "$work/second.out")"
else
    echo "FAIL: a second exporter on the port: exit $rc, $lines lines"
    cat "$work/second.out"
    fail=1
fi

# Prometheus, on loopback, scraping every second, with the shipped rules.
cp "$ROOT/config/prometheus/gridwire-rules.yml" "$work/"
cat >"$work/prometheus.yml" <<EOF
global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files: [gridwire-rules.yml]
scrape_configs:
  - job_name: gridwire
    static_configs:
      - targets: ['$EXP']
EOF
prometheus --config.file="$work/prometheus.yml" --storage.tsdb.path="$work/tsdb" \
    --web.listen-address="$PROM" >"$work/prometheus.log" 2>&1 &
prom=$!
gw_cleanup_push kill "$prom"
# q EXPR: Prometheus's value of an instant query (the first series), or
# nothing.
q() {
    curl -sf "http://$PROM/api/v1/query" --data-urlencode "query=$1" | python3 -c '
import json, sys
r = json.load(sys.stdin)["data"]["result"]
print(r[0]["value"][1] if r else "")'
}
# wait_for EXPR: EXPR has a result within 60 s.
wait_for() {
    for _ in $(seq 120); do
        [[ -n $(q "$1" 2>/dev/null) ]] && return 0
        sleep 0.5
    done
    return 1
}
gw_check "Prometheus is up and scrapes the exporter" wait_for 'up{job="gridwire"} == 1'

# A paced verified run (2 x 250 writers, 250,000 msg/s each, about 40 s):
# a member goes down, fires its alert, and comes back meanwhile.
out=$work/pair.out
export GW_LINK=cable
gw_pair_bg "$out" --procs 2 --writers 250 --msgs 40000 --rate 250000
pair=$GW_PID_PAIR
gw_check "both gateways seen up by Prometheus" wait_for 'sum(gridwire_up) == 2'
gw_check "messages being delivered at beta (rate > 0)" \
    wait_for 'rate(gridwire_messages_delivered_total{node="beta"}[5s]) > 0'
# The exposition with both gateways in it: Prometheus's linter on the text
# format, and the OpenMetrics answer through a strict parser.
gw_check "the exposition passes promtool check metrics" \
    bash -c "curl -sf http://$EXP/metrics | promtool check metrics"
# (Debian's python3-prometheus-client: the system's python, whatever is first on PATH.)
gw_check "the OpenMetrics answer parses (prometheus_client's strict parser)" /usr/bin/python3 -c '
import sys, urllib.request
from prometheus_client.openmetrics.parser import text_string_to_metric_families
req = urllib.request.Request(sys.argv[1], headers={"Accept": "application/openmetrics-text; version=1.0.0"})
fams = list(text_string_to_metric_families(urllib.request.urlopen(req).read().decode()))
assert any(f.name == "gridwire_lane_rtt_seconds" and f.type == "histogram" for f in fams)
' "http://$EXP/metrics"
gw_check "alpha's member 0 taken down" gw_member cable 0 down
gw_check "gridwire_member_up shows alpha's member 0 down" \
    wait_for 'gridwire_member_up{node="alpha",member="0"} == 0'
gw_check "GridwireMemberDown fires for alpha's member 0 (Prometheus's rule evaluation)" \
    wait_for 'ALERTS{alertname="GridwireMemberDown",alertstate="firing",node="alpha",member="0"}'
gw_check "alpha's member 0 brought back" gw_member cable 0 up
wait "$pair" || true
tail -4 "$out"
js=$(tail -1 "$out")
delivered=$(python3 -c 'import json, sys; j = json.loads(sys.argv[1]); print(j["delivered"] if j["delivered"] == j["sent"] and not j["duplicates"] and not j["order_violations"] else -1)' "$js") ||
    delivered=-1
if ((delivered > 0)); then
    echo "ok: the run: all $delivered messages once and in order"
else
    echo "FAIL: the run lost, repeated or reordered messages"
    fail=1
fi
stored=$(q 'max_over_time(gridwire_messages_delivered_total{node="beta"}[10m])')
# increase() extrapolates to its window's edges from the samples inside:
# the run's count, within a few per cent, not exactly.
increase=$(q 'increase(gridwire_messages_delivered_total{node="beta"}[10m])')
python3 - "$delivered" "${stored:-0}" "${increase:-0}" <<'PY' || fail=1
import sys
n, stored, inc = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3])
ok1 = 0.95 * n <= stored <= n
ok2 = abs(inc - n) <= 0.05 * n
print(f"{'ok' if ok1 else 'FAIL'}: Prometheus's last sample of beta's delivered counter {stored:.0f}, "
      f"of the run's {n} (the gateway stops within a scrape of the end)")
print(f"{'ok' if ok2 else 'FAIL'}: Prometheus's increase over the run {inc:.0f}, within 5 % of {n}")
sys.exit(0 if ok1 and ok2 else 1)
PY

# The gateways have stopped with the run: down, and counted, while the
# exporter lives on; a new run brings them back.
gw_check "stopped gateways: gridwire_up{node=\"beta\"} 0" wait_for 'gridwire_up{node="beta"} == 0'
gw_check "scrape errors counted while beta is gone" \
    wait_for 'gridwire_exporter_scrape_errors_total{node="beta"} > 0'
gw_pair_bg "$work/pair2.out" --procs 1 --writers 10 --msgs 20000 --rate 20000
gw_check "a new run: beta up again for Prometheus" wait_for 'gridwire_up{node="beta"} == 1'
gw_check "a new run: beta's counters back" \
    wait_for 'gridwire_messages_delivered_total{node="beta"} > 0'
wait "$GW_PID_PAIR" || true
gw_check "the exporter is the same process throughout" kill -0 "$exporter"
((fail == 0)) || { echo "exporter log:"; cat "$work/exporter.log"; tail -20 "$work/prometheus.log"; }
exit $fail
