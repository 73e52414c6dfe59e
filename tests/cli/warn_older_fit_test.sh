#!/usr/bin/env bash
# scripts/llm-files.sh warn_older_fit (eval-llm-loo.sh EVAL_ONLY=1) against a scratch git
# repository whose core/kernel.cpp was committed at a known time, and a copy of the bundled
# manifest whose gemm entry carries a marked trained_at: trained before that commit -> one
# warning line naming the family, the time and the commit's; trained after it -> silent; after
# it but with core/kernel.cpp edited and not committed -> the warning says so; a family without
# trained_at, or a folder that is no git checkout -> silent.
#   tests/cli/warn_older_fit_test.sh SOURCE_DIR
set -euo pipefail
SRC=$1
. "$(dirname "$0")/expect.sh"  # $W, fail
. "$SRC/scripts/llm-files.sh"
repo="$W/repo"
mkdir -p "$repo/core"
git -C "$repo" init -q
echo "// bounds" > "$repo/core/kernel.cpp"
git -C "$repo" add core/kernel.cpp
GIT_COMMITTER_DATE=2026-06-01T12:00:00Z GIT_AUTHOR_DATE=2026-06-01T12:00:00Z \
  git -C "$repo" -c user.name=t -c user.email=t@t commit -qm bounds
m="$W/manifest.yaml"
stamp() { sed -e '/^  gemm:$/,/^  [a-z_]*:$/ s/^    trained_at: .*/    trained_at: '"$1"'/' "$SRC/weights/manifest.yaml" > "$m"; }
stamp 2026-05-31T23:59:59Z
err=$(warn_older_fit "$m" gemm "$repo" 2>&1)
[ "$(wc -l <<<"$err")" = 1 ] || fail "one line expected: $err"
grep -q "^eval-llm-loo: warning: gemm of $m was trained at 2026-05-31T23:59:59Z, before the last commit to core/kernel.{h,cpp} (2026-06-01T12:00:00+00:00): re-scoring applies today's bounds" <<<"$err" \
  || fail "message: $err"
stamp 2026-06-01T12:00:01Z
err=$(warn_older_fit "$m" gemm "$repo" 2>&1)
[ -z "$err" ] || fail "trained after the commit, yet: $err"
echo "// bounds, edited" > "$repo/core/kernel.cpp"
err=$(warn_older_fit "$m" gemm "$repo" 2>&1)
grep -q "was trained at 2026-06-01T12:00:01Z, and core/kernel.{h,cpp} have uncommitted changes" <<<"$err" \
  || fail "uncommitted edit: $err"
err=$(warn_older_fit "$m" no_such_family "$repo" 2>&1)
[ -z "$err" ] || fail "no trained_at, yet: $err"
stamp 2000-01-01T00:00:00Z
mkdir -p "$W/plain"
err=$(warn_older_fit "$m" gemm "$W/plain" 2>&1)
[ -z "$err" ] || fail "no git checkout, yet: $err"
echo ok
