# rdmarepl::failover: replica groups that elect their leader through a Coordinator (etcd over
# its v3 JSON gateway, with libcurl). Included from the top-level CMakeLists.txt only when
# libcurl and nlohmann-json were found, so that the core library never depends on them.
add_library(rdmarepl_failover
  ${CMAKE_CURRENT_LIST_DIR}/../coordination/etcd_coordinator.cc
  ${CMAKE_CURRENT_LIST_DIR}/history.cc
  ${CMAKE_CURRENT_LIST_DIR}/log_rewind.cc
  ${CMAKE_CURRENT_LIST_DIR}/node_control.cc)
add_library(rdmarepl::failover ALIAS rdmarepl_failover)
set_target_properties(rdmarepl_failover PROPERTIES CXX_EXTENSIONS OFF POSITION_INDEPENDENT_CODE ON
                      EXPORT_NAME failover VERSION ${PROJECT_VERSION}
                      SOVERSION ${PROJECT_VERSION_MAJOR})
target_include_directories(rdmarepl_failover PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/src)
target_link_libraries(rdmarepl_failover PUBLIC rdmarepl
                      PRIVATE CURL::libcurl nlohmann_json::nlohmann_json PkgConfig::SODIUM)
rdmarepl_set_warnings(rdmarepl_failover)
