list(APPEND RDMAREPL_SOURCES ${CMAKE_CURRENT_LIST_DIR}/types.cc
     ${CMAKE_CURRENT_LIST_DIR}/failure_reason.cc
     ${CMAKE_CURRENT_LIST_DIR}/qp_manager.cc
     ${CMAKE_CURRENT_LIST_DIR}/wait_any.cc)
foreach(part bootstrap tcp fault)
  if(EXISTS ${CMAKE_CURRENT_LIST_DIR}/${part}/sources.cmake)
    include(${CMAKE_CURRENT_LIST_DIR}/${part}/sources.cmake)
  endif()
endforeach()
if(RDMAREPL_HAVE_VERBS AND EXISTS ${CMAKE_CURRENT_LIST_DIR}/verbs/sources.cmake)
  include(${CMAKE_CURRENT_LIST_DIR}/verbs/sources.cmake)
endif()
