#!/usr/bin/env bash
# Configures and builds tilecast into ./build (Release, Ninja if present). Idempotent.
# Extra CMake arguments are passed through, e.g. scripts/build.sh -DTILECAST_WERROR=ON
set -euo pipefail
cd "$(dirname "$0")/.."
gen=()
command -v ninja >/dev/null 2>&1 && gen=(-G Ninja)
if [ ! -f build/CMakeCache.txt ]; then
  cmake -S . -B build "${gen[@]}" -DCMAKE_BUILD_TYPE=Release "$@"
elif [ $# -gt 0 ]; then
  cmake -S . -B build "$@"
fi
# Two parallel jobs: each torch translation unit needs ~1.5 GB and 30-50 s.
cmake --build build -j "${TILECAST_BUILD_JOBS:-2}"
