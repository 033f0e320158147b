list(APPEND RDMAREPL_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/frame_receiver.cc
  ${CMAKE_CURRENT_LIST_DIR}/frame_sender.cc
  ${CMAKE_CURRENT_LIST_DIR}/registry.cc
  ${CMAKE_CURRENT_LIST_DIR}/send_queue.cc
  ${CMAKE_CURRENT_LIST_DIR}/tcp_connection.cc
  ${CMAKE_CURRENT_LIST_DIR}/tcp_transport.cc)
