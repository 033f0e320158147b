# The process harness shared by the replicated_kv demo and the rdmarepl-bench driver:
# role processes, the demo store, the workload, latency statistics and result output.
# Included from both places; defined once.
if(NOT TARGET rdmarepl_kvharness)
  set(_kv ${PROJECT_SOURCE_DIR}/examples/replicated_kv)
  add_library(rdmarepl_kvharness STATIC
    ${_kv}/child_process.cc ${_kv}/cluster.cc ${_kv}/control_socket.cc ${_kv}/flags.cc
    ${_kv}/kv_store.cc ${_kv}/latency.cc ${_kv}/linearizability.cc ${_kv}/metrics_server.cc ${_kv}/metrics_text.cc ${_kv}/progress.cc ${_kv}/read_check.cc ${_kv}/roles.cc
    ${_kv}/run_config.cc ${_kv}/workload.cc)
  target_include_directories(rdmarepl_kvharness PUBLIC ${_kv})
  find_package(nlohmann_json 3 CONFIG REQUIRED)
  target_link_libraries(rdmarepl_kvharness PUBLIC rdmarepl::rdmarepl
                        PRIVATE nlohmann_json::nlohmann_json)
  if(TARGET rdmarepl::prometheus)
    target_link_libraries(rdmarepl_kvharness PUBLIC rdmarepl::prometheus)
    target_compile_definitions(rdmarepl_kvharness PRIVATE RDMAREPL_KV_PROMETHEUS=1)
  else()
    target_compile_definitions(rdmarepl_kvharness PRIVATE RDMAREPL_KV_PROMETHEUS=0)
  endif()
  # Failover runs (failover_run.h) need rdmarepl::failover (libcurl and nlohmann-json).
  if(TARGET rdmarepl::failover)
    target_sources(rdmarepl_kvharness PRIVATE ${_kv}/failover_group.cc ${_kv}/failover_member.cc ${_kv}/failover_run.cc ${_kv}/plain_member.cc ${_kv}/tcp_proxy.cc)
    find_package(CURL REQUIRED)  # etcd's /metrics (failover_group.h)
    target_link_libraries(rdmarepl_kvharness PUBLIC rdmarepl::failover PRIVATE CURL::libcurl)
    target_compile_definitions(rdmarepl_kvharness PUBLIC RDMAREPL_KV_FAILOVER=1)
  else()
    target_compile_definitions(rdmarepl_kvharness PUBLIC RDMAREPL_KV_FAILOVER=0)
  endif()
  rdmarepl_set_warnings(rdmarepl_kvharness)
endif()
