list(APPEND RDMAREPL_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/socket.cc
  ${CMAKE_CURRENT_LIST_DIR}/admission.cc
  ${CMAKE_CURRENT_LIST_DIR}/socket_arrivals.cc
  ${CMAKE_CURRENT_LIST_DIR}/hello.cc
  ${CMAKE_CURRENT_LIST_DIR}/pipe.cc
  ${CMAKE_CURRENT_LIST_DIR}/handshake.cc)
