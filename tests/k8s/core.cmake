# The Kubernetes core (label "unit"): the pod table and pod list parser over kubectl JSON fixtures
# (fixtures/), the poller over an in-memory kubelet (fake_pod_resources.h), and the attribution
# source over fixture /proc trees with kubepods cgroup paths.
gw_unit_test(k8s_core_test
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/pod_table_test.cpp ${CMAKE_CURRENT_LIST_DIR}/poller_test.cpp
          ${CMAKE_CURRENT_LIST_DIR}/attribution_source_test.cpp
  LIBS gw_k8s)
