#!/usr/bin/env bash
# For a machine with a GPU, in one command that fits in 5 minutes: builds collkit with CUDA (and
# NCCL where found) into build-gpu/, runs every GPU test (ctest -L gpu), then a short benchmark:
# the cuda backend with 4 ranks on one GPU and the nccl backend under mpirun (-np 1, and -np 2
# when two GPUs exist) for AllReduce, AllGather and ReduceScatter from 1 MiB to 256 MiB, printing
# nccl-tests' tables (nccl: the plan beside NCCL's own collective, and their time ratio).
# Env: COLLKIT_JOBS (build parallelism, default nproc), CMAKE_CUDA_ARCHITECTURES (default 80;90).
# --carried: no build; run what scripts/gpu-carry.sh packed into .gpucarry/ on a machine without
# collkit's dependencies (its NCCL from PyTorch's pip package, MPI as a singleton: one GPU, -np 1).
set -euo pipefail
cd "$(dirname "$0")/.."
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
start=$SECONDS
step() { echo; echo "== $* ($((SECONDS - start)) s)"; }

step "GPUs"
nvidia-smi -L || { echo "gpu-check: nvidia-smi -L found no GPU; this script is for a machine with one"; exit 1; }
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
gpus=$(nvidia-smi -L | grep -c '^GPU ' || true)

bench=(--coll allreduce,allgather,reducescatter -b 1M -e 256M -f 4 -n 20 -w 5)
# The cuda backend runs every rank in one process: no launcher, so no discovered topology for auto.
cuda_bench=(--coll allreduce,allgather,reducescatter --algo ring,rhd,direct -b 1M -e 64M -f 8 -n 10 -w 3 -c 0)
if [ "${1:-}" = --carried ]; then
  c=$PWD/.gpucarry
  [ -x "$c/bin/coll-run" ] || { echo "gpu-check: no .gpucarry/ (run scripts/gpu-carry.sh where collkit builds, and carry it)"; exit 1; }
  nccl=$(python3 -c "import nvidia.nccl; print(list(nvidia.nccl.__path__)[0] + '/lib')" 2>/dev/null || true)
  export LD_LIBRARY_PATH=$c/lib:$nccl:${LD_LIBRARY_PATH:-}
  export OMPI_MCA_ess_singleton_isolated=1 OMPI_MCA_mca_base_component_path=$c/ompi OMPI_MCA_btl=self,vader OMPI_MCA_pml=ob1
  # mpirun -np 1 as a singleton, for the GPU test script's nccl case (no orted carried).
  mkdir -p "$c/shim"
  printf '%s\n' '#!/usr/bin/env bash' 'a=(); while [ $# -gt 0 ]; do case "$1" in -np) [ "$2" = 1 ] || exit 2; shift 2;; --oversubscribe) shift;; *) a+=("$1"); shift;; esac; done; exec "${a[@]}"' >"$c/shim/mpirun"
  chmod +x "$c/shim/mpirun"
  export PATH=$c/shim:$PATH
  run=$c/bin/coll-run
  step "GPU kernels match host"
  timeout 120 "$c/bin/collkit_gpu_kernel_test"
  step "GPU integration tests (tests/integration/coll_run_gpu.sh)"
  COLLKIT_BIN=$c/bin COLLKIT_FIXTURES=$PWD/tests/fixtures COLLKIT_CONFIGS=$PWD/configs COLLKIT_DOCS=$PWD/docs \
    timeout 270 bash tests/integration/coll_run_gpu.sh
  step "GPU overlap test (tests/integration/coll_overlap_gpu.sh: cuBLAS GEMMs, nccl with two GPUs)"
  COLLKIT_BIN=$c/bin COLLKIT_FIXTURES=$PWD/tests/fixtures COLLKIT_CONFIGS=$PWD/configs COLLKIT_DOCS=$PWD/docs \
    timeout 270 bash tests/integration/coll_overlap_gpu.sh
  step "cuda backend: 4 ranks on one GPU (no native collective to compare with)"
  timeout 150 "$run" --backend cuda --ranks 4 "${cuda_bench[@]}"
  step "nccl backend: one rank (singleton)"
  timeout 120 "$run" --backend nccl "${bench[@]}"
  step "done"
  exit 0
fi

step "build (build-gpu)"
# RelWithDebInfo (-O2), the project's default: at -O3 GCC 12 reports false -Wrestrict errors in
# libs/topo's string concatenations, which -Werror turns into a failed build.
arch=()
[ -n "${CMAKE_CUDA_ARCHITECTURES:-}" ] && arch=(-DCMAKE_CUDA_ARCHITECTURES="$CMAKE_CUDA_ARCHITECTURES")
COLLKIT_BUILD_DIR=build-gpu COLLKIT_TARGETS="coll-run coll-plan coll-topo coll-overlap collkit_gpu_kernel_test" \
  ./scripts/build.sh -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCOLLKIT_BUILD_BENCH=OFF -DCOLLKIT_WITH_CUDA=ON "${arch[@]}"
grep -q "COLLKIT_HAVE_CUDA 1" build-gpu/generated/collkit/config.h ||
  { echo "gpu-check: the build found no CUDA (see build-gpu/configure.log)"; exit 1; }
run=build-gpu/bin/coll-run

step "GPU tests (ctest -L gpu)"
(cd build-gpu && ctest --output-on-failure -L gpu)

step "cuda backend: 4 ranks on one GPU (no native collective to compare with)"
timeout 180 "$run" --backend cuda --ranks 4 "${cuda_bench[@]}"

if grep -q "COLLKIT_HAVE_NCCL 1" build-gpu/generated/collkit/config.h; then
  step "nccl backend: mpirun -np 1"
  timeout 120 mpirun -np 1 "$run" --backend nccl "${bench[@]}"
  if [ "$gpus" -ge 2 ]; then
    step "nccl backend: mpirun -np 2"
    timeout 120 mpirun -np 2 "$run" --backend nccl "${bench[@]}"
  fi
else
  echo "gpu-check: this build found no NCCL: the nccl benchmark is left out"
fi
step "done"
