#!/usr/bin/env bash
# Installs every Debian package tilecast needs to build and test. Idempotent; run as root
# (or with sudo available). See docs/build.md for why each package is here.
set -euo pipefail

PKGS=(
  build-essential cmake ninja-build git
  libtorch-dev            # LibTorch 1.13 (CPU): the MLPs
  libopenblas0-openmp     # fast BLAS for libtorch and the forecasts (reference BLAS is ~30x slower)
  libblas-dev             # cblas.h (the forecasting MLP calls cblas_sgemm, opened at run time)
  libyaml-cpp-dev         # configs/*.yaml
  libboost-program-options-dev
  nlohmann-json3-dev      # JSON reports, NeuSight label/device JSONs
  libgtest-dev            # tests
  pybind11-dev python3-dev  # the Python module (`import tilecast`, python/)
  python3-matplotlib      # plots of scripts/reproduce-paper.sh
  python3-yaml            # scripts/check-doc-figures.py reads docs/quoted-forecasts.yaml
  libssl-dev              # SHA-256 of weights checkpoints (OpenSSL libcrypto)
  clang libclang-rt-14-dev  # sanitizer + libFuzzer build of the core (scripts/sanitize-fuzz.sh)
)

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

missing=()
for p in "${PKGS[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all packages present" >&2
else
  echo "install-deps: installing ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# libopenblas0-pthread would win the libblas.so.3 alternative (priority 100) and is 2-4x
# slower with libtorch's OpenMP runtime: make sure the OpenMP variant is the one in use.
if dpkg-query -W -f='${Status}' libopenblas0-pthread 2>/dev/null | grep -q "install ok installed"; then
  arch_dir=/usr/lib/x86_64-linux-gnu
  $SUDO update-alternatives --set libblas.so.3-x86_64-linux-gnu \
    "$arch_dir/openblas-openmp/libblas.so.3" || true
  $SUDO update-alternatives --set liblapack.so.3-x86_64-linux-gnu \
    "$arch_dir/openblas-openmp/liblapack.so.3" || true
fi
