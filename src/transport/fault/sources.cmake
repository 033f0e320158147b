list(APPEND RDMAREPL_SOURCES ${CMAKE_CURRENT_LIST_DIR}/fault_injecting_transport.cc)
