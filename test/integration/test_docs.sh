#!/usr/bin/env bash
# The documents hold: README.md, the guide (doc/*.md) and the Erlang
# binding's README have no broken relative link or heading anchor, and
# every ./scripts/gw command, gwctl command and path of the tree they show
# exists (test/integration/docs_check.py). The checker must see a broken
# link, a missing anchor and an unknown command in a copy made to have
# them. And the README stays a front door: under 250 lines. The recipe of
# doc/operations.md "Two gateways to point clients at" runs as written:
# two long-lived gateways, a client built against the build tree, a call
# across, the gateways stopped; and every example of doc/python.md runs
# against those gateways.
# gw-timeout: 120
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/lib.sh"
ROOT=$(gw_root)
CHECK=$ROOT/test/integration/docs_check.py
gw_workdir docs
fail=0

if python3 "$CHECK" "$ROOT" >"$work/check.out"; then
    echo "ok: $(tail -1 "$work/check.out")"
else
    echo "FAIL: the documents:"
    cat "$work/check.out"
    fail=1
fi
lines=$(wc -l <"$ROOT/README.md")
if ((lines < 250)); then
    echo "ok: README.md is a front door ($lines lines)"
else
    echo "FAIL: README.md has $lines lines (keep it under 250; the rest belongs in doc/)"
    fail=1
fi

# The recipe, as the document shows it (the first sh block after its heading).
python3 - "$ROOT/doc/operations.md" >"$work/recipe.sh" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
after = text.split("### Two gateways to point clients at", 1)[1]
print(re.search(r"```sh\n(.*?)```", after, re.S).group(1))
PY
gw_cleanup_push "$ROOT/scripts/gateways.sh" down
if (cd "$ROOT" && bash -e "$work/recipe.sh") >"$work/recipe.out" 2>&1 &&
    grep -q "node 2 answered: hello from node 2" "$work/recipe.out" &&
    grep -q "alpha: running" "$work/recipe.out" && grep -q "gateways: down" "$work/recipe.out"; then
    echo "ok: the two-gateway recipe runs as written ($(grep -c . "$work/recipe.sh") lines): $(grep answered "$work/recipe.out")"
else
    echo "FAIL: the two-gateway recipe of doc/operations.md:"
    cat "$work/recipe.out"
    fail=1
fi
[[ ! -e /run/gridwire/gateways/alpha.pid ]] || { echo "FAIL: gateways down left alpha's pid file"; fail=1; }

# doc/python.md's examples (every python block), each as written, against
# the same two gateways, with Debian's python3 and the module as built.
python3 - "$ROOT/doc/python.md" "$work" <<'PY'
import re, sys
for i, block in enumerate(re.findall(r"```python\n(.*?)```", open(sys.argv[1]).read(), re.S)):
    open(f"{sys.argv[2]}/python-{i}.py", "w").write(block)
PY
"$ROOT/scripts/gateways.sh" up >"$work/python-gateways.out" 2>&1
for ex in "$work"/python-*.py; do
    if PYTHONPATH=$ROOT/build/bindings/python timeout 120 /usr/bin/python3 "$ex" \
        >"${ex%.py}.out" 2>&1; then
        echo "ok: doc/python.md's example $(basename "$ex" .py) runs: $(tail -1 "${ex%.py}.out")"
    else
        echo "FAIL: doc/python.md's example $(basename "$ex" .py):"
        cat "$ex" "${ex%.py}.out"
        fail=1
    fi
done
"$ROOT/scripts/gateways.sh" down >>"$work/python-gateways.out" 2>&1

# A copy with one of each fault: each must be named.
mkdir -p "$work/tree"
cp -r "$ROOT/README.md" "$ROOT/doc" "$ROOT/scripts" "$ROOT/app" "$ROOT/config" "$ROOT/test" \
    "$ROOT/lib" "$ROOT/bindings" "$work/tree/"
cat >>"$work/tree/doc/tests.md" <<'MD'

See [nowhere](no-such-file.md), [a lost heading](figures.md#no-such-heading), and run
`./scripts/gw frobnicate` or `gwctl frob`, as `scripts/no-such-script.sh` does.
MD
python3 "$CHECK" "$work/tree" >"$work/bad.out" || true
for want in "no-such-file.md: no such file" "no heading #no-such-heading" \
    "gw frobnicate\`: not a command" "gwctl frob\`: not a command" "scripts/no-such-script.sh\`: no such file"; do
    gw_check "the checker names: $want" grep -qF -- "$want" "$work/bad.out"
done
exit $fail
