# Finds what the library needs. Every package named here is installed by scripts/setup.
find_package(Threads REQUIRED)
find_package(fmt 9 CONFIG REQUIRED)
find_package(Boost 1.74 REQUIRED)
find_package(PkgConfig REQUIRED)

set(RDMAREPL_PRIVATE_LIBS "")

# Pre-shared-key authentication of the bootstrap handshake (HMAC-SHA-512/256).
pkg_check_modules(SODIUM REQUIRED IMPORTED_TARGET libsodium)
list(APPEND RDMAREPL_PRIVATE_LIBS PkgConfig::SODIUM)

# The verbs transport: AUTO builds it when libibverbs (and librdmacm) are found.
set(RDMAREPL_HAVE_VERBS OFF)
if(NOT RDMAREPL_WITH_VERBS STREQUAL "OFF")
  pkg_check_modules(IBVERBS IMPORTED_TARGET libibverbs)
  pkg_check_modules(RDMACM IMPORTED_TARGET librdmacm)
  if(IBVERBS_FOUND AND RDMACM_FOUND)
    set(RDMAREPL_HAVE_VERBS ON)
    set(RDMAREPL_VERBS_LIBS PkgConfig::IBVERBS PkgConfig::RDMACM)
  elseif(RDMAREPL_WITH_VERBS STREQUAL "ON")
    message(FATAL_ERROR "RDMAREPL_WITH_VERBS=ON but libibverbs/librdmacm were not found: "
                        "install libibverbs-dev and librdmacm-dev (scripts/setup does).")
  endif()
endif()
message(STATUS "rdmarepl: verbs transport ${RDMAREPL_HAVE_VERBS}")

# The XGBoost tuner: AUTO builds it when the XGBoost C API (libxgboost-dev) is found. Linked
# privately: the public headers never include xgboost's.
set(RDMAREPL_HAVE_XGBOOST OFF)
if(NOT RDMAREPL_WITH_XGBOOST STREQUAL "OFF")
  pkg_check_modules(XGBOOST IMPORTED_TARGET xgboost)
  if(XGBOOST_FOUND)
    set(RDMAREPL_HAVE_XGBOOST ON)
    list(APPEND RDMAREPL_PRIVATE_LIBS PkgConfig::XGBOOST)
  elseif(RDMAREPL_WITH_XGBOOST STREQUAL "ON")
    message(FATAL_ERROR "RDMAREPL_WITH_XGBOOST=ON but the XGBoost C API was not found: "
                        "install libxgboost-dev and xgboost (scripts/setup does).")
  endif()
endif()
message(STATUS "rdmarepl: XGBoost tuner ${RDMAREPL_HAVE_XGBOOST}")

# io_uring submission of WAL appends (WriterOptions::submission): AUTO builds it when
# liburing is found. Linked privately; the public headers never include liburing's.
set(RDMAREPL_HAVE_URING OFF)
if(NOT RDMAREPL_WITH_URING STREQUAL "OFF")
  pkg_check_modules(URING IMPORTED_TARGET liburing)
  if(URING_FOUND)
    set(RDMAREPL_HAVE_URING ON)
    list(APPEND RDMAREPL_PRIVATE_LIBS PkgConfig::URING)
  elseif(RDMAREPL_WITH_URING STREQUAL "ON")
    message(FATAL_ERROR "RDMAREPL_WITH_URING=ON but liburing was not found: "
                        "install liburing-dev (scripts/setup does).")
  endif()
endif()
message(STATUS "rdmarepl: io_uring WAL submission ${RDMAREPL_HAVE_URING}")

# The persistent-memory WAL backend (WriterOptions::backend = pmem, or auto on a DAX file
# system): AUTO builds it when libpmem is found. Linked privately; the public headers never
# include libpmem's.
set(RDMAREPL_HAVE_PMEM OFF)
if(NOT RDMAREPL_WITH_PMEM STREQUAL "OFF")
  pkg_check_modules(PMEM IMPORTED_TARGET libpmem)
  if(PMEM_FOUND)
    set(RDMAREPL_HAVE_PMEM ON)
    list(APPEND RDMAREPL_PRIVATE_LIBS PkgConfig::PMEM)
  elseif(RDMAREPL_WITH_PMEM STREQUAL "ON")
    message(FATAL_ERROR "RDMAREPL_WITH_PMEM=ON but libpmem was not found: "
                        "install libpmem-dev (scripts/setup does).")
  endif()
endif()
message(STATUS "rdmarepl: persistent-memory WAL backend ${RDMAREPL_HAVE_PMEM}")

# The Prometheus exposition (rdmarepl::prometheus: collectables for a channel's metrics and
# the RNIC's counters, and an HTTP exposer): AUTO builds it when prometheus-cpp (Debian
# prometheus-cpp-dev) is found. It is a library of its own that links prometheus-cpp
# publicly; the core library does not depend on it.
set(RDMAREPL_HAVE_PROMETHEUS OFF)
if(NOT RDMAREPL_WITH_PROMETHEUS STREQUAL "OFF")
  find_package(prometheus-cpp CONFIG QUIET)
  if(prometheus-cpp_FOUND AND TARGET prometheus-cpp::pull)
    set(RDMAREPL_HAVE_PROMETHEUS ON)
  elseif(RDMAREPL_WITH_PROMETHEUS STREQUAL "ON")
    message(FATAL_ERROR "RDMAREPL_WITH_PROMETHEUS=ON but prometheus-cpp was not found: "
                        "install prometheus-cpp-dev (scripts/setup does).")
  endif()
endif()
message(STATUS "rdmarepl: Prometheus exposition ${RDMAREPL_HAVE_PROMETHEUS}")

# RocksDB, for the example that embeds rdmarepl in it (examples/rocksdb_replicated) and its
# test and benchmark only; the library never links it. AUTO builds the example when
# librocksdb-dev (pkg-config rocksdb, 7.8.3 on Debian 12) is found.
set(RDMAREPL_HAVE_ROCKSDB OFF)
set(RDMAREPL_ROCKSDB_REASON "RDMAREPL_WITH_ROCKSDB=OFF")
if(NOT RDMAREPL_WITH_ROCKSDB STREQUAL "OFF")
  pkg_check_modules(ROCKSDB IMPORTED_TARGET rocksdb)
  if(ROCKSDB_FOUND)
    set(RDMAREPL_HAVE_ROCKSDB ON)
  elseif(RDMAREPL_WITH_ROCKSDB STREQUAL "ON")
    message(FATAL_ERROR "RDMAREPL_WITH_ROCKSDB=ON but RocksDB was not found: "
                        "install librocksdb-dev (scripts/setup does).")
  else()
    set(RDMAREPL_ROCKSDB_REASON "RocksDB not found (install librocksdb-dev; scripts/setup does)")
  endif()
endif()
message(STATUS "rdmarepl: RocksDB example ${RDMAREPL_HAVE_ROCKSDB}")

# Failover (rdmarepl::failover: replica groups electing their leader through etcd): AUTO
# builds it when libcurl and nlohmann-json are found. A library of its own; the core library
# does not depend on them.
set(RDMAREPL_WITH_FAILOVER AUTO CACHE STRING "Build rdmarepl::failover (etcd coordination): AUTO|ON|OFF")
set(RDMAREPL_HAVE_FAILOVER OFF)
if(NOT RDMAREPL_WITH_FAILOVER STREQUAL "OFF")
  find_package(CURL QUIET)
  find_package(nlohmann_json 3 CONFIG QUIET)
  if(CURL_FOUND AND nlohmann_json_FOUND)
    set(RDMAREPL_HAVE_FAILOVER ON)
  elseif(RDMAREPL_WITH_FAILOVER STREQUAL "ON")
    message(FATAL_ERROR "RDMAREPL_WITH_FAILOVER=ON but libcurl or nlohmann-json was not found: "
                        "install libcurl4-openssl-dev and nlohmann-json3-dev (scripts/setup does).")
  endif()
endif()
message(STATUS "rdmarepl: failover (etcd) ${RDMAREPL_HAVE_FAILOVER}")
