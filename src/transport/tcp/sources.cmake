list(APPEND RDMAREPL_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/registry.cc
  ${CMAKE_CURRENT_LIST_DIR}/tcp_connection.cc
  ${CMAKE_CURRENT_LIST_DIR}/tcp_messages.cc
  ${CMAKE_CURRENT_LIST_DIR}/tcp_receive.cc
  ${CMAKE_CURRENT_LIST_DIR}/tcp_transport.cc)
