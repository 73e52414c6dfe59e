# Sourced by the scripts that train and score networks (eval-llm-loo.sh, eval-llm-heldout.sh,
# eval-neusight-loo.sh, eval-amd-loo.sh): one BLAS kernel set on every x86 machine with AVX2.
# OpenBLAS picks its kernels by CPU, and its AVX-512 ones (SkylakeX) sum in another order than
# its AVX2 ones (Haswell), so the same training run lands elsewhere on another CPU: on an AVX-512
# machine the GEMM and prefill leave-one-GPU-out tables of docs/accuracy.md (27.6 / 37.2 %) came
# out 28.0 / 37.6 % (cells up to 2.6 points apart), and to the tenth as printed there with
# OPENBLAS_CORETYPE=Haswell (docs/accuracy.md, "Training on another CPU"); retraining the bundled
# prefill and GEMM networks with it wrote the bundled files byte for byte. So a CPU with AVX2
# runs the AVX2 kernels here; a value already set (OPENBLAS_CORETYPE=SkylakeX, say) is kept, and
# a CPU without AVX2 keeps OpenBLAS's own choice.
if [ -z "${OPENBLAS_CORETYPE:-}" ] && grep -qw avx2 /proc/cpuinfo 2> /dev/null; then
  export OPENBLAS_CORETYPE=Haswell
fi
