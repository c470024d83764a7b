#!/usr/bin/env bash
# Gathers what tools/gpu-check.sh needs but a bare GPU machine lacks (it has nvcc, CMake and Python with
# PyTorch, but no Debian packages and no network) into .deps/ (ignored by git), from this machine's
# Debian packages: the Catch2, toml++, nlohmann-json and DLPack headers; OpenBLAS with its runtime; HDF5
# (Debian's libhdf5-dev headers and libhdf5-103-1 library, fetched with apt-get download, plus the shared
# libraries it loads, glibc's own apart) for checkpoints, the rollout log and `surge h5`; and Gymnasium's
# golden transitions from ../shared/golden, which the golden GPU tests read and which does not travel with
# the working tree. The libraries are packed into .deps/libs.tar.xz to keep .deps small (about 20 MB;
# 64 MB unpacked); tools/gpu-check.sh unpacks it into its build folder.
#
# Layout: .deps/include (headers), .deps/golden, and .deps/libs.tar.xz holding lib/ (OpenBLAS) and hdf5/
# (include/, and lib/ with libhdf5.so and the libraries it loads, by soname): unpacked into DIR, a build
# finds HDF5 with -DHDF5_ROOT=DIR/hdf5.
set -euo pipefail
cd "$(dirname "$0")/.."
rm -rf .deps
mkdir -p .deps/include .deps/lib .deps/hdf5/include .deps/hdf5/lib
cp -r /usr/include/catch2 /usr/include/toml++ /usr/include/nlohmann /usr/include/dlpack .deps/include/
openblas_include=/usr/include/x86_64-linux-gnu/openblas-pthread
openblas_lib=/usr/lib/x86_64-linux-gnu/openblas-pthread
if [[ -f $openblas_lib/libopenblas.so.0 ]]; then
  cp $openblas_include/cblas.h $openblas_include/openblas_config.h .deps/include/
  cp -L $openblas_lib/libopenblas.so.0 .deps/lib/
  ln -sf libopenblas.so.0 .deps/lib/libopenblas.so
  for runtime in libgfortran.so.5 libquadmath.so.0; do
    cp -L /usr/lib/x86_64-linux-gnu/$runtime .deps/lib/
  done
else
  echo "gpu-deps: OpenBLAS not found (apt-get install libopenblas-dev); the CPU backend will use its built-in GEMM" >&2
fi

# HDF5: the packages themselves (apt-get download needs no root), or this machine's copy if that fails.
hdf5_work=$(mktemp -d)
trap 'rm -rf "$hdf5_work"' EXIT
hdf5_tree=/
if (cd "$hdf5_work" && apt-get download libhdf5-dev libhdf5-103-1) >"$hdf5_work/download.log" 2>&1; then
  for package in "$hdf5_work"/*.deb; do dpkg-deb -x "$package" "$hdf5_work/tree"; done
  hdf5_tree=$hdf5_work/tree
else
  echo "gpu-deps: apt-get download libhdf5-dev libhdf5-103-1 failed; using this machine's HDF5 if installed" >&2
fi
hdf5_headers=$hdf5_tree/usr/include/hdf5/serial
hdf5_library=$(find "$hdf5_tree/usr/lib/x86_64-linux-gnu" -maxdepth 1 -type f -name "libhdf5_serial.so.[0-9]*.*" 2>/dev/null | head -1)
if [[ -f $hdf5_headers/hdf5.h && -n $hdf5_library ]]; then
  cp "$hdf5_headers"/*.h .deps/hdf5/include/
  soname=$(objdump -p "$hdf5_library" | awk '/SONAME/ {print $2}')
  cp "$hdf5_library" ".deps/hdf5/lib/$soname"
  ln -sf "$soname" .deps/hdf5/lib/libhdf5.so
  # The libraries it loads, each under its soname; glibc's own are on every machine.
  missing=""
  while read -r name _ path _; do
    [[ $name =~ ^(libc|libm|libdl|libpthread|librt|libresolv|ld-linux.*)\.so ]] && continue
    if [[ $path == not ]]; then
      missing+=" $name"
    else
      cp -L "$path" ".deps/hdf5/lib/$name"
    fi
  done < <(ldd ".deps/hdf5/lib/$soname" | grep "=>")
  if [[ -n $missing ]]; then
    echo "gpu-deps: libhdf5 needs$missing, not installed here (apt-get install libhdf5-103-1)" >&2
    exit 1
  fi
else
  rm -rf .deps/hdf5
  echo "gpu-deps: HDF5 not found; checkpoints, the rollout log and surge h5 will not be built on the GPU machine" >&2
fi

if [[ -d ../shared/golden ]]; then
  cp -r ../shared/golden .deps/golden
else
  echo "gpu-deps: ../shared/golden not found; the golden GPU tests will fail on the GPU machine" >&2
fi

libraries=(lib)
[[ -d .deps/hdf5 ]] && libraries+=(hdf5)
tar -C .deps -cf - "${libraries[@]}" | xz -6 -T2 >.deps/libs.tar.xz
rm -rf "${libraries[@]/#/.deps/}"
du -sh .deps
