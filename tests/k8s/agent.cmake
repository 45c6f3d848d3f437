# The agent binary end to end on Kubernetes: `gpuwarden serve --simulate scenarios/kubernetes.yaml`
# with jobs.scheduler: kubernetes against the stand-in kubelet gw-fake-kubelet (grpc.cmake), the
# example reclaim hook with a fake kubectl (agent_test.py says what it checks). About a minute of
# real time (the simulator and the kubelet run on the wall clock): label "integration".
if(NOT GW_BUILD_INTEGRATION OR NOT TARGET gw-fake-kubelet)
  return()
endif()
set(Python3_EXECUTABLE /usr/bin/python3)
find_package(Python3 REQUIRED COMPONENTS Interpreter)
add_test(NAME k8s_agent_end_to_end
         COMMAND Python3::Interpreter ${CMAKE_CURRENT_LIST_DIR}/agent_test.py
                 --gpuwarden $<TARGET_FILE:gpuwarden>
                 --fake-kubelet $<TARGET_FILE:gw-fake-kubelet>)
set_tests_properties(k8s_agent_end_to_end PROPERTIES LABELS integration TIMEOUT 300)
# The same agent when libgpuwarden-k8s.so cannot be found: the error names where it looked,
# gpuwarden_kubernetes_up is 0, /metrics is served (a few seconds).
add_test(NAME k8s_agent_missing_module
         COMMAND Python3::Interpreter ${CMAKE_CURRENT_LIST_DIR}/agent_test.py
                 --gpuwarden $<TARGET_FILE:gpuwarden>
                 --fake-kubelet $<TARGET_FILE:gw-fake-kubelet> --missing-module)
set_tests_properties(k8s_agent_missing_module PROPERTIES LABELS integration TIMEOUT 120)
