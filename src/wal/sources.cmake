list(APPEND RDMAREPL_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/file.cc
  ${CMAKE_CURRENT_LIST_DIR}/reporter.cc
  ${CMAKE_CURRENT_LIST_DIR}/segment_reader.cc
  ${CMAKE_CURRENT_LIST_DIR}/reader.cc
  ${CMAKE_CURRENT_LIST_DIR}/uring.cc
  ${CMAKE_CURRENT_LIST_DIR}/pmem.cc
  ${CMAKE_CURRENT_LIST_DIR}/writer_options.cc
  ${CMAKE_CURRENT_LIST_DIR}/writer.cc
  ${CMAKE_CURRENT_LIST_DIR}/checkpoint.cc
  ${CMAKE_CURRENT_LIST_DIR}/log.cc)
