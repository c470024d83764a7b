# Training logs, apart from the learner: TensorBoard event files (plain C++, always built) and the
# HDF5 rollout log (an optional part, built when HDF5's C library is found).
set(_surge_rl_io_dir ${CMAKE_CURRENT_LIST_DIR})

add_library(surge_tensorboard STATIC ${_surge_rl_io_dir}/crc32c.cpp ${_surge_rl_io_dir}/tensorboard.cpp)
surge_target_defaults(surge_tensorboard)
target_link_libraries(surge_tensorboard PUBLIC surge_sim)

find_package(HDF5 COMPONENTS C)
find_package(Threads REQUIRED)
if(HDF5_FOUND)
  set(SURGE_WITH_HDF5 ON)
  add_library(surge_rollout_log STATIC ${_surge_rl_io_dir}/hdf5_util.cpp ${_surge_rl_io_dir}/rollout_log.cpp
              ${_surge_rl_io_dir}/rollout_log_file.cpp ${_surge_rl_io_dir}/rollout_file.cpp
              ${_surge_rl_io_dir}/rollout_episodes.cpp)
  surge_target_defaults(surge_rollout_log)
  target_include_directories(surge_rollout_log SYSTEM PRIVATE ${HDF5_INCLUDE_DIRS})
  target_link_libraries(surge_rollout_log PUBLIC surge_sim Threads::Threads PRIVATE ${HDF5_C_LIBRARIES})
  target_compile_definitions(surge_rollout_log PUBLIC SURGE_WITH_HDF5=1 PRIVATE ${HDF5_DEFINITIONS})
  message(STATUS "Surge rollout log: HDF5 ${HDF5_VERSION}")
else()
  set(SURGE_WITH_HDF5 OFF)
  message(STATUS "HDF5 not found: the rollout log and 'surge h5' are left out (on Debian: apt-get install libhdf5-dev)")
endif()
