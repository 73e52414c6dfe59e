# Shared by the CLI test scripts (source it after `set -euo pipefail`): a scratch folder $W
# removed on exit, fail MSG, and expect_fail REGEX CMD...: exit 1 and one stderr line matching REGEX.
W="$(mktemp -d)"
trap 'rm -rf "$W"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
expect_fail() {
  local re="$1"; shift
  set +e; "$@" > "$W/out" 2> "$W/err"; local rc=$?; set -e
  [ "$rc" = 1 ] || { cat "$W/err"; fail "$* -> exit $rc, expected 1"; }
  grep -Eq -- "$re" "$W/err" || { cat "$W/err"; fail "$* -> stderr lacks '$re'"; }
  [ "$(wc -l < "$W/err")" -eq 1 ] || { cat "$W/err"; fail "$* -> more than one stderr line"; }
  echo "ok   $(head -c 150 "$W/err")"
}
