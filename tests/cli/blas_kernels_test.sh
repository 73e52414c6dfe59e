#!/usr/bin/env bash
# scripts/blas-kernels.sh: on a CPU with AVX2, OpenBLAS runs its Haswell kernels in the
# processes of a script that sources it (asked of the library itself, openblas_get_corename);
# a value the caller set is kept; every script that trains networks sources it.
#   tests/cli/blas_kernels_test.sh SOURCE_DIR
set -euo pipefail
SRC=$1
. "$(dirname "$0")/expect.sh"  # fail
corename='import ctypes
lib = ctypes.CDLL("libopenblas.so.0")
lib.openblas_get_corename.restype = ctypes.c_char_p
print(lib.openblas_get_corename().decode())'
kept=$(OPENBLAS_CORETYPE=Prescott bash -c '. "$1"; echo "$OPENBLAS_CORETYPE"' _ "$SRC/scripts/blas-kernels.sh")
[ "$kept" = Prescott ] || fail "the caller's OPENBLAS_CORETYPE was replaced: $kept"
if ! grep -qw avx2 /proc/cpuinfo; then
  left=$(env -u OPENBLAS_CORETYPE bash -c '. "$1"; echo "${OPENBLAS_CORETYPE-unset}"' _ "$SRC/scripts/blas-kernels.sh")
  [ "$left" = unset ] || fail "a CPU without AVX2 was given $left"
elif python3 -c 'import ctypes; ctypes.CDLL("libopenblas.so.0")' 2> /dev/null; then
  core=$(env -u OPENBLAS_CORETYPE bash -c '. "$1"; python3 -c "$2"' _ "$SRC/scripts/blas-kernels.sh" "$corename")
  [ "$core" = Haswell ] || fail "OpenBLAS runs $core kernels after blas-kernels.sh, expected Haswell"
else
  echo "skip: libopenblas.so.0 not loadable here (scripts/install-deps.sh installs libopenblas0-openmp)"
fi
for s in eval-llm-loo.sh eval-llm-heldout.sh eval-neusight-loo.sh eval-amd-loo.sh; do
  grep -q '^\. scripts/blas-kernels\.sh' "$SRC/scripts/$s" || fail "scripts/$s does not source scripts/blas-kernels.sh"
done
echo ok
