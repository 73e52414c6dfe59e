# Sourced by the evaluation scripts: `to_file FILE CMD ARGS...` runs CMD with its stdout in
# FILE.tmp and renames it to FILE only when CMD succeeds, so an interrupted or failed step never
# leaves a partial report under its final name (a stale FILE.tmp says what was cut short).
to_file() {
  local out="$1"; shift
  "$@" > "$out.tmp"
  mv "$out.tmp" "$out"
}
