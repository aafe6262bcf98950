#!/usr/bin/env bash
# Packs what scripts/gpu-check.sh needs on a GPU machine that has CUDA's driver but none of collkit's
# Debian dependencies (the device machines lent to sessions: Ubuntu with CUDA, PyTorch and NCCL from
# pip, no Open MPI, hwloc, fmt, ...): the tools and the GPU test built here with CUDA, every shared
# library they load (glibc, NCCL and the CUDA driver left to the machine) and Open MPI's components,
# into .gpucarry/ (git-ignored; carry it). On the machine, `scripts/gpu-check.sh --carried` runs them.
# Usage: scripts/gpu-carry.sh [build-dir, default build]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
grep -q "COLLKIT_HAVE_CUDA 1" "$build/generated/collkit/config.h" ||
  { echo "gpu-carry: $build was built without CUDA: build with CUDA first (scripts/build.sh finds /usr/local/cuda)"; exit 1; }
COLLKIT_BUILD_DIR=$build COLLKIT_TARGETS="coll-run coll-plan coll-topo coll-overlap collkit_gpu_kernel_test" ./scripts/build.sh >/dev/null
exclude=$(git rev-parse --git-common-dir)/info/exclude
mkdir -p "$(dirname "$exclude")"
grep -qx "/.gpucarry/" "$exclude" 2>/dev/null || echo "/.gpucarry/" >>"$exclude"
rm -rf .gpucarry
mkdir -p .gpucarry/bin .gpucarry/lib .gpucarry/ompi
cp "$build"/bin/{coll-run,coll-plan,coll-topo,coll-overlap,collkit_gpu_kernel_test} .gpucarry/bin/
strip --strip-debug .gpucarry/bin/*
ompi=$(dirname "$(find /usr/lib -name mca_btl_self.so -print -quit)")
cp "$ompi"/*.so .gpucarry/ompi/
for f in .gpucarry/bin/* .gpucarry/ompi/*.so; do ldd "$f" 2>/dev/null; done | awk '/=> \//{print $3}' | sort -u |
  grep -vE '/(libc|libm|libpthread|libdl|librt|libnccl|libcuda)\.so|ld-linux' | xargs -r -I{} cp -L {} .gpucarry/lib/
echo "gpu-carry: .gpucarry/ holds $(ls .gpucarry/bin | wc -l) programs, $(ls .gpucarry/lib | wc -l) libraries, $(ls .gpucarry/ompi | wc -l) Open MPI components ($(du -sh .gpucarry | cut -f1))"
