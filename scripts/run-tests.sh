#!/usr/bin/env bash
# The test command: builds if needed, then runs every test with ctest.
# NeuSight-data tests use $TILECAST_NEUSIGHT_DIR (default ../shared/neusight) and skip
# with a message when it is absent.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh "$@"
ctest --test-dir build --output-on-failure -j 2
