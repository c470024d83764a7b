# Training logs, apart from the learner: TensorBoard event files (plain C++) and the HDF5 rollout log
# (HDF5's C library is an optional part: without it, a stand-in is built).
set(_surge_rl_io_dir ${CMAKE_CURRENT_LIST_DIR})

add_library(surge_tensorboard STATIC ${_surge_rl_io_dir}/crc32c.cpp ${_surge_rl_io_dir}/tensorboard.cpp)
surge_target_defaults(surge_tensorboard)
target_link_libraries(surge_tensorboard PUBLIC surge_sim)

find_package(HDF5 COMPONENTS C)
find_package(Threads REQUIRED)
# The rollout log, its reader and the episodes rebuilt from it always build; without HDF5 the file
# behind them is a stand-in that answers every open with one line saying so.
add_library(surge_rollout_log STATIC ${_surge_rl_io_dir}/rollout_log.cpp ${_surge_rl_io_dir}/rollout_log_lock.cpp
                                     ${_surge_rl_io_dir}/hdf5_read_guard.cpp
                                     ${_surge_rl_io_dir}/rollout_episodes.cpp)
surge_target_defaults(surge_rollout_log)
target_link_libraries(surge_rollout_log PUBLIC surge_sim Threads::Threads)
if(HDF5_FOUND)
  set(SURGE_WITH_HDF5 ON)
  target_sources(surge_rollout_log PRIVATE ${_surge_rl_io_dir}/hdf5_util.cpp ${_surge_rl_io_dir}/rollout_log_file.cpp
                 ${_surge_rl_io_dir}/rollout_file.cpp)
  target_include_directories(surge_rollout_log SYSTEM PRIVATE ${HDF5_INCLUDE_DIRS})
  target_link_libraries(surge_rollout_log PRIVATE ${HDF5_C_LIBRARIES})
  target_compile_definitions(surge_rollout_log PRIVATE ${HDF5_DEFINITIONS})
  message(STATUS "Surge rollout log: HDF5 ${HDF5_VERSION}")
else()
  set(SURGE_WITH_HDF5 OFF)
  target_sources(surge_rollout_log PRIVATE ${_surge_rl_io_dir}/no_hdf5_rollout_log.cpp)
  message(STATUS "HDF5 not found: checkpoints, the rollout log and 'surge h5' answer that this build has no HDF5 "
                 "(on Debian: apt-get install libhdf5-dev)")
endif()
