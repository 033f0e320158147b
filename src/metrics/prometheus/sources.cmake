# rdmarepl::prometheus: the Prometheus exposition (channel and RNIC collectables, the HTTP
# endpoint). Included from the top-level CMakeLists.txt only when prometheus-cpp was found.
add_library(rdmarepl_prometheus
  ${CMAKE_CURRENT_LIST_DIR}/channel_collector.cc
  ${CMAKE_CURRENT_LIST_DIR}/histogram_buckets.cc
  ${CMAKE_CURRENT_LIST_DIR}/process_collector.cc
  ${CMAKE_CURRENT_LIST_DIR}/read_server_collector.cc
  ${CMAKE_CURRENT_LIST_DIR}/rnic_collector.cc
  ${CMAKE_CURRENT_LIST_DIR}/endpoint.cc)
add_library(rdmarepl::prometheus ALIAS rdmarepl_prometheus)
set_target_properties(rdmarepl_prometheus PROPERTIES CXX_EXTENSIONS OFF POSITION_INDEPENDENT_CODE ON
                      EXPORT_NAME prometheus VERSION ${PROJECT_VERSION}
                      SOVERSION ${PROJECT_VERSION_MAJOR})
target_link_libraries(rdmarepl_prometheus PUBLIC rdmarepl prometheus-cpp::core prometheus-cpp::pull)
rdmarepl_set_warnings(rdmarepl_prometheus)
