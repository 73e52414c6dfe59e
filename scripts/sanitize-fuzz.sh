#!/usr/bin/env bash
# The torch-free core under AddressSanitizer + UndefinedBehaviorSanitizer (clang): builds
# build-san/, runs the core tests there, then each libFuzzer target (fuzz/) for a bounded
# time from a seed corpus of the project's own fixtures and configs. Called by
# scripts/run-tests.sh; alone: scripts/sanitize-fuzz.sh [SECONDS_PER_TARGET].
# A crash leaves its input as build-san/crash-* and fails the run.
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_PER_TARGET="${1:-${TILECAST_FUZZ_SECONDS:-30}}"
B=build-san
gen=()
command -v ninja >/dev/null 2>&1 && gen=(-G Ninja)
if [ ! -f "$B/CMakeCache.txt" ]; then
  CC=clang CXX=clang++ cmake -S . -B "$B" "${gen[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DTILECAST_CORE_ONLY=ON -DTILECAST_SANITIZE=ON -DTILECAST_FUZZ=ON -DTILECAST_WERROR=ON > /dev/null
fi
cmake --build "$B" -j "${TILECAST_BUILD_JOBS:-2}"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
ctest --test-dir "$B" --output-on-failure -j 2

# Seed corpora: the project's fixtures and configs (nothing from ../shared is copied).
C="$B/corpus"
rm -rf "$C/seed"; mkdir -p "$C/seed"/{csv,gpu_spec,sweep,model_config,label_json,dense_mlp}
cp tests/data/*.csv tests/data/bad/*.csv "$C/seed/csv/"
for f in configs/gpus/*.yaml tests/data/gpus_bad/*.yaml; do
  { printf '\0'; cat "$f"; } > "$C/seed/gpu_spec/$(basename "$f")"
done
{ printf '\1'; cat tests/data/neusight_device.json; } > "$C/seed/gpu_spec/neusight_device.json"
cp configs/sweeps/*.yaml "$C/seed/sweep/"
cp configs/models/*.json tests/data/bad_config/*.json "$C/seed/model_config/"
find tests/data/labels tests/data/bad_labels -name '*.json' -exec cp {} "$C/seed/label_json/" \;
# Inputs that crashed a parser once (fixed) stay in the seeds as regression cases.
cp tests/data/fuzz_found/label_*.json "$C/seed/label_json/"
cp tests/data/fuzz_found/sweep_*.yaml "$C/seed/sweep/"
cp tests/data/fuzz_found/gpu_spec_* "$C/seed/gpu_spec/"  # first byte already picks JSON
cp tests/data/tiny.tcmlp "$C/seed/dense_mlp/"
for t in csv gpu_spec sweep model_config label_json dense_mlp; do
  mkdir -p "$C/$t"
  echo "fuzz_$t: ${SECONDS_PER_TARGET}s" >&2
  # A fixed seed keeps CI reproducible; TILECAST_FUZZ_SEED=0 draws a fresh one for hunting.
  "$B/fuzz/fuzz_$t" -seed="${TILECAST_FUZZ_SEED:-1}" -max_total_time="$SECONDS_PER_TARGET" -timeout=10 -rss_limit_mb=2048 \
    -artifact_prefix="$B/crash-$t-" -print_final_stats=0 "$C/$t" "$C/seed/$t" 2>&1 | tail -n 3 >&2
done
echo "sanitize-fuzz: core tests and ${SECONDS_PER_TARGET}s per fuzz target passed" >&2
