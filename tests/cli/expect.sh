# Shared by the CLI test scripts (source it after `set -euo pipefail`): a scratch folder $W
# removed on exit, fail MSG, expect_fail REGEX CMD...: exit 1 and one stderr line matching REGEX,
# and manifest_family MANIFEST FAMILY: the family's entry in a weights manifest (its "  FAMILY:"
# line and the deeper lines under it).
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
manifest_family() {
  awk -v fam="  $2:" '/^  [A-Za-z0-9_]+:$/ { f = ($0 == fam) } /^[^ ]/ { f = 0 } f' "$1"
}
