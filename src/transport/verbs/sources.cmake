list(APPEND RDMAREPL_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/handles.cc
  ${CMAKE_CURRENT_LIST_DIR}/device.cc
  ${CMAKE_CURRENT_LIST_DIR}/async_events.cc
  ${CMAKE_CURRENT_LIST_DIR}/qp.cc
  ${CMAKE_CURRENT_LIST_DIR}/connection.cc
  ${CMAKE_CURRENT_LIST_DIR}/connection_datapath.cc
  ${CMAKE_CURRENT_LIST_DIR}/connection_messages.cc
  ${CMAKE_CURRENT_LIST_DIR}/verbs_transport.cc
  ${CMAKE_CURRENT_LIST_DIR}/cm.cc
  ${CMAKE_CURRENT_LIST_DIR}/cm_listener.cc
  ${CMAKE_CURRENT_LIST_DIR}/cm_pipe.cc)
