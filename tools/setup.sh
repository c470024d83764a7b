#!/usr/bin/env bash
# Surge set-up in one command, for a fresh Debian 12 / Ubuntu machine with the CUDA toolkit, as root.
#
#   tools/setup.sh            install what is missing, build, install the Python package (pip install .),
#                             run the main job (train CartPole, bench env)
#   tools/setup.sh test       install what is missing, build, run the whole test suite (with the Python
#                             package's pytest suite, against the extension in the build tree)
#   tools/setup.sh --deps-only | --build-only    one half only (the Dockerfile uses these)
#
# Environment: BUILD_DIR (default build), SURGE_CUDA_ARCHITECTURES (narrow the CUDA targets, e.g. 90-real),
# JOBS (parallel build jobs, default: all cores).
set -euo pipefail

cd "$(dirname "$0")/.."
build_dir=${BUILD_DIR:-build}
jobs=${JOBS:-$(nproc)}
action=main
case "${1:-}" in
  "" | main) action=main ;;
  test) action=test ;;
  --deps-only) action=deps ;;
  --build-only) action=build ;;
  -h | --help)
    sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'
    exit 0 ;;
  *)
    echo "tools/setup.sh: unknown action '$1'; use 'main', 'test', '--deps-only' or '--build-only'" >&2
    exit 2 ;;
esac

say() { echo "setup: $*"; }

debian_packages=(cmake g++ make pkg-config python3 python3-pip catch2 libopenblas-dev libhdf5-dev
                 libtomlplusplus-dev nlohmann-json3-dev libdlpack-dev libtorch-dev openmpi-bin libopenmpi-dev
                 python3-dev python3-torch zlib1g-dev ffmpeg libdnnl-dev)
# Modules (module:package where pip names it otherwise; pip's name takes '-' for '_'): independent checkers
# for the tests (Gymnasium itself with pygame for its frames, h5py, TensorBoard, Pillow for GIFs); for the
# Python package, nanobind and scikit-build-core to build it and pytest for its tests.
python_packages=(numpy gymnasium h5py tensorboard pygame PIL:pillow nanobind scikit_build_core pytest)

pip_install() {
  python3 -m pip install --quiet "$@" 2>/dev/null || python3 -m pip install --quiet --break-system-packages "$@"
}

install_deps() {
  local missing=()
  for package in "${debian_packages[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
      missing+=("$package")
    fi
  done
  if ((${#missing[@]})); then
    say "installing Debian packages: ${missing[*]}"
    if [[ $(id -u) -ne 0 ]]; then
      echo "setup: these packages are missing and installing them needs root: ${missing[*]}" >&2
      exit 2
    fi
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  else
    say "Debian packages: all present"
  fi
  local missing_py=()
  for entry in "${python_packages[@]}"; do
    local module=${entry%%:*} package=${entry#*:}
    python3 -c "import $module" 2>/dev/null || missing_py+=("${package//_/-}")
  done
  if ((${#missing_py[@]})); then
    say "installing Python packages: ${missing_py[*]}"
    pip_install "${missing_py[@]}"
  else
    say "Python packages: all present"
  fi
  if ! python3 -c "import jax" 2>/dev/null; then
    # NumPy stays where it is: Debian's python3-torch is built against Debian's NumPy.
    pip_install "jax[cpu]" "numpy==$(python3 -c 'import numpy; print(numpy.__version__)')" ||
      say "JAX not installed (none fits this NumPy): the Python package's JAX tests will be skipped"
  fi
  # Debian's PyTorch (python3-torch) is for /usr/bin/python3. Where python3 on the PATH is another install,
  # the package's torch tests run under /usr/bin/python3 (tests/CMakeLists.txt), which needs these two.
  if [[ -x /usr/bin/python3 && "$(command -v python3)" != /usr/bin/python3 ]] &&
    /usr/bin/python3 -c "import torch" 2>/dev/null && ! /usr/bin/python3 -c "import gymnasium, pytest" 2>/dev/null; then
    say "installing gymnasium and pytest for /usr/bin/python3, whose PyTorch checks the package's torch views"
    /usr/bin/python3 -m pip install --quiet --break-system-packages gymnasium pytest ||
      say "not installed: the package's torch tests are left out"
  fi
  if ! command -v nvcc >/dev/null && [[ ! -x /usr/local/cuda/bin/nvcc ]]; then
    say "nvcc not found: building the CPU backend only (install the CUDA toolkit for the GPU backend)"
  fi
}

build() {
  local cmake_args=(-S . -B "$build_dir" -DCMAKE_BUILD_TYPE=Release)
  if [[ -n "${SURGE_CUDA_ARCHITECTURES:-}" ]]; then
    cmake_args+=("-DSURGE_CUDA_ARCHITECTURES=${SURGE_CUDA_ARCHITECTURES}")
  fi
  if python3 -c "import nanobind" 2>/dev/null; then
    cmake_args+=(-DSURGE_BUILD_PYTHON=ON "-DPython_EXECUTABLE=$(command -v python3)")
  fi
  say "configuring in $build_dir"
  mkdir -p "$build_dir"
  cmake "${cmake_args[@]}" >"$build_dir/configure.log" 2>&1 || { cat "$build_dir/configure.log"; exit 1; }
  grep -E "^-- Surge" "$build_dir/configure.log" || true
  say "building with $jobs jobs"
  cmake --build "$build_dir" -j "$jobs"
}

# The Python package, built again by pip in its own folder (docs/python.md).
install_package() {
  local pip_args=(.)
  if [[ -n "${SURGE_CUDA_ARCHITECTURES:-}" ]]; then
    pip_args+=(-C "cmake.define.SURGE_CUDA_ARCHITECTURES=${SURGE_CUDA_ARCHITECTURES}")
  fi
  say "installing the Python package surge (pip install .)"
  pip_install "${pip_args[@]}"
}

case "$action" in
  deps) install_deps ;;
  build) build ;;
  main)
    install_deps
    build
    install_package
    say "running the main job: PPO on CartPole until the mean return of the last 100 episodes reaches 475"
    "$build_dir/bin/surge" train --scenario cartpole --device auto --target-return 475
    say "the run's folder (named above: runs/cartpole/<date>-<time>-seed1) holds metrics.csv and checkpoint.h5; environment throughput next"
    "$build_dir/bin/surge" bench env --scenario cartpole --device auto ;;
  test)
    install_deps
    build
    say "running the test suite"
    ctest --test-dir "$build_dir" --output-on-failure ;;
esac
