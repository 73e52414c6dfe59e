#!/usr/bin/env bash
# The test command: builds if needed, runs every test with ctest, then the sanitizer and
# fuzzing pass (scripts/sanitize-fuzz.sh).
# NeuSight-data tests use $TILECAST_NEUSIGHT_DIR (default ../shared/neusight); they skip
# with a message only where no ../shared folder exists (elsewhere missing data fails).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh "$@"
ctest --test-dir build --output-on-failure -j 2
# The torch-free core again under ASan + UBSan (clang), then each parser's libFuzzer target
# for a bounded time (TILECAST_FUZZ_SECONDS, default 30). TILECAST_SKIP_SANITIZE=1 skips it.
if [ "${TILECAST_SKIP_SANITIZE:-0}" != 1 ]; then
  bash scripts/sanitize-fuzz.sh
fi
