# Training logs, apart from the learner: TensorBoard event files (plain C++, always built) and the
# HDF5 rollout log (an optional part, built when HDF5's C library is found).
set(_surge_rl_dir ${CMAKE_CURRENT_LIST_DIR})

add_library(surge_tensorboard STATIC ${_surge_rl_dir}/crc32c.cpp ${_surge_rl_dir}/tensorboard.cpp)
surge_target_defaults(surge_tensorboard)
target_link_libraries(surge_tensorboard PUBLIC surge_sim)
