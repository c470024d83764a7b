# kernel_report (CUDA builds): <build>/kernel-report.json and .txt, every kernel of the Surge libraries with
# its registers, spills, stack and shared memory and its theoretical occupancy, for the architectures built.
# ptxas reports them as the libraries compile (SurgeCuda.cmake); this only collects them, in a second.
if(SURGE_WITH_CUDA AND Python3_Interpreter_FOUND)
  set(_surge_report_script ${PROJECT_SOURCE_DIR}/tools/kernel_report/report.py)
  set(_surge_kernel_launchers ${PROJECT_SOURCE_DIR}/sim/parallel.cuh ${PROJECT_SOURCE_DIR}/sim/parallel_segments.cuh
                              ${PROJECT_SOURCE_DIR}/rl/fused_mlp_cuda.cu ${PROJECT_SOURCE_DIR}/rl/fused_mlp_cuda_plan.hpp)
  add_custom_command(
    OUTPUT ${CMAKE_BINARY_DIR}/kernel-report.json ${CMAKE_BINARY_DIR}/kernel-report.txt
    COMMAND ${Python3_EXECUTABLE} ${_surge_report_script} write
            --objects "$<TARGET_OBJECTS:surge_sim>" "$<TARGET_OBJECTS:surge_scenarios>" "$<TARGET_OBJECTS:surge_rl>"
            --launchers ${_surge_kernel_launchers}
            --json ${CMAKE_BINARY_DIR}/kernel-report.json --text ${CMAKE_BINARY_DIR}/kernel-report.txt
    COMMAND_EXPAND_LISTS
    DEPENDS surge_sim surge_scenarios surge_rl ${_surge_report_script} ${_surge_kernel_launchers}
    COMMENT "Kernel resource report: kernel-report.json")
  add_custom_target(kernel_report ALL DEPENDS ${CMAKE_BINARY_DIR}/kernel-report.json)
endif()
