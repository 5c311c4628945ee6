#!/usr/bin/env bash
# The documents hold: README.md, the guide (doc/*.md) and the Erlang
# binding's README have no broken relative link or heading anchor, and
# every ./scripts/gw command, gwctl command and path of the tree they show
# exists (test/integration/docs_check.py). The checker must see a broken
# link, a missing anchor and an unknown command in a copy made to have
# them. And the README stays a front door: under 250 lines.
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
