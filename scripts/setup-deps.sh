#!/usr/bin/env bash
# Installs collkit's build and test dependencies from Debian's archive. Idempotent: it installs
# only what is missing, and does nothing (no apt-get update) when everything is present.
set -euo pipefail

packages=(
  build-essential cmake pkg-config git python3
  libcli11-dev nlohmann-json3-dev doctest-dev libbenchmark-dev libfmt-dev libpugixml-dev
  libboost-graph-dev libglpk-dev libhwloc-dev libedit-dev libibverbs-dev ibverbs-providers
  libopenmpi-dev openmpi-bin libopenblas-dev
  gnuplot-nox time clang libclang-rt-14-dev
  libnetfilter-queue-dev iptables
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup-deps: all ${#packages[@]} packages present"
  exit 0
fi

echo "setup-deps: installing ${missing[*]}"
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"

# CUDA and NCCL are not Debian packages here: they come with the machine image at /usr/local/cuda
# (or CUDAToolkit_ROOT). The build reports in one line whether it found them.
