list(APPEND RDMAREPL_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/arena.cc
  ${CMAKE_CURRENT_LIST_DIR}/arena_set.cc
  ${CMAKE_CURRENT_LIST_DIR}/external_region.cc
  ${CMAKE_CURRENT_LIST_DIR}/registrar.cc
  ${CMAKE_CURRENT_LIST_DIR}/registration_cache.cc
  ${CMAKE_CURRENT_LIST_DIR}/slab_pool.cc
  ${CMAKE_CURRENT_LIST_DIR}/translation_table.cc)
