# SURGE_SANITIZE=thread: a ThreadSanitizer build of the CPU backend, for the rollout log's writer thread and
# the OpenMP loops (tools/tsan-check.sh builds and runs it). CPU only: nvcc's host code is not TSan's.
#
# GCC's libgomp is not instrumented, so TSan cannot see the synchronisation at the edges of an OpenMP
# region and reports races that are not there. Suppressing them would mean suppressing every report whose
# stack passes through libgomp, which is every access made inside a parallel loop: the check would prove
# nothing. Instead this build needs Clang with LLVM's libomp and its Archer tool (libarcher, Debian's
# libomp-dev), which tells TSan about every OpenMP barrier, task and lock, with TSan told to ignore what
# uninstrumented libraries (libomp itself) do inside (ignore_noninstrumented_modules=1, as Archer's
# documentation asks): every access our code makes is still checked, and reports that remain are real.
set(SURGE_SANITIZE "" CACHE STRING "Build with a sanitizer: 'thread' (Clang, CPU backend only), or empty")
set(SURGE_ARCHER_LIBRARY "")
if(SURGE_SANITIZE STREQUAL "thread")
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "SURGE_SANITIZE=thread needs Clang and its OpenMP runtime with Archer (libgomp is not "
                        "instrumented): configure with CC=clang CXX=clang++ -DSURGE_ENABLE_CUDA=OFF")
  endif()
  if(SURGE_ENABLE_CUDA)
    message(FATAL_ERROR "SURGE_SANITIZE=thread builds the CPU backend only: add -DSURGE_ENABLE_CUDA=OFF")
  endif()
  get_filename_component(_surge_clang_dir ${CMAKE_CXX_COMPILER} REALPATH)
  get_filename_component(_surge_clang_dir ${_surge_clang_dir} DIRECTORY)
  find_library(SURGE_ARCHER_LIBRARY_PATH archer HINTS ${_surge_clang_dir}/../lib)
  if(NOT SURGE_ARCHER_LIBRARY_PATH)
    message(FATAL_ERROR "SURGE_SANITIZE=thread: libarcher (LLVM's OpenMP tool for TSan) not found next to "
                        "${CMAKE_CXX_COMPILER}. On Debian: apt-get install libomp-dev")
  endif()
  set(SURGE_ARCHER_LIBRARY ${SURGE_ARCHER_LIBRARY_PATH})
  add_compile_options(-fsanitize=thread -g -fno-omit-frame-pointer)
  add_link_options(-fsanitize=thread)
  message(STATUS "Surge sanitizer: ThreadSanitizer, OpenMP through Archer (${SURGE_ARCHER_LIBRARY})")
elseif(SURGE_SANITIZE)
  message(FATAL_ERROR "SURGE_SANITIZE=${SURGE_SANITIZE}: the one sanitizer build is 'thread'")
endif()
