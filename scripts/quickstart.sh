#!/usr/bin/env bash
# One command after cloning: install the Debian packages, build, and run a real forecast
# with the bundled weights (a GPT-2-Large QKV projection on an H100 it was never trained on).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh
echo
echo "== tilecast predict-kernel --op linear --shape 4096,1280,3840 --gpu H100-SXM"
./build/tilecast predict-kernel --op linear --shape 4096,1280,3840 --gpu H100-SXM
