list(APPEND RDMAREPL_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/options.cc
  ${CMAKE_CURRENT_LIST_DIR}/read_format.cc
  ${CMAKE_CURRENT_LIST_DIR}/server_connection.cc
  ${CMAKE_CURRENT_LIST_DIR}/read_server_core.cc
  ${CMAKE_CURRENT_LIST_DIR}/read_client.cc
  ${CMAKE_CURRENT_LIST_DIR}/read_engine.cc
  ${CMAKE_CURRENT_LIST_DIR}/replica_link.cc)
