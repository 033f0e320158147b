list(APPEND RDMAREPL_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/batch_format.cc
  ${CMAKE_CURRENT_LIST_DIR}/channel_core.cc
  ${CMAKE_CURRENT_LIST_DIR}/channel_tuning.cc
  ${CMAKE_CURRENT_LIST_DIR}/core_base.cc
  ${CMAKE_CURRENT_LIST_DIR}/durability.cc
  ${CMAKE_CURRENT_LIST_DIR}/follower.cc
  ${CMAKE_CURRENT_LIST_DIR}/follower_wal.cc
  ${CMAKE_CURRENT_LIST_DIR}/hello.cc
  ${CMAKE_CURRENT_LIST_DIR}/commit_callbacks.cc
  ${CMAKE_CURRENT_LIST_DIR}/leader.cc
  ${CMAKE_CURRENT_LIST_DIR}/leader_callbacks.cc
  ${CMAKE_CURRENT_LIST_DIR}/leader_connect.cc
  ${CMAKE_CURRENT_LIST_DIR}/leader_knobs.cc
  ${CMAKE_CURRENT_LIST_DIR}/leader_wal.cc
  ${CMAKE_CURRENT_LIST_DIR}/options.cc
  ${CMAKE_CURRENT_LIST_DIR}/registered_buffer.cc
  ${CMAKE_CURRENT_LIST_DIR}/transport_select.cc)
