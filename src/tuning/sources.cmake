# The tuning layer. The XGBoost model is compiled only when XGBoost was found
# (RDMAREPL_HAVE_XGBOOST); otherwise a stub reports Errc::unsupported.
list(APPEND RDMAREPL_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/knobs.cc
  ${CMAKE_CURRENT_LIST_DIR}/samplers.cc
  ${CMAKE_CURRENT_LIST_DIR}/features.cc
  ${CMAKE_CURRENT_LIST_DIR}/dataset.cc
  ${CMAKE_CURRENT_LIST_DIR}/heuristic_tuner.cc
  ${CMAKE_CURRENT_LIST_DIR}/model_tuner.cc
  ${CMAKE_CURRENT_LIST_DIR}/xgboost_tuner.cc
  ${CMAKE_CURRENT_LIST_DIR}/lstm_model.cc
  ${CMAKE_CURRENT_LIST_DIR}/lstm_tuner.cc
  ${CMAKE_CURRENT_LIST_DIR}/registry.cc
  ${CMAKE_CURRENT_LIST_DIR}/runner.cc
  ${CMAKE_CURRENT_LIST_DIR}/synthetic.cc
  ${CMAKE_CURRENT_LIST_DIR}/model_eval.cc)
if(RDMAREPL_HAVE_XGBOOST)
  list(APPEND RDMAREPL_SOURCES
    ${CMAKE_CURRENT_LIST_DIR}/json_scan.cc
    ${CMAKE_CURRENT_LIST_DIR}/forest.cc
    ${CMAKE_CURRENT_LIST_DIR}/model_xgb.cc)
else()
  list(APPEND RDMAREPL_SOURCES ${CMAKE_CURRENT_LIST_DIR}/model_none.cc)
endif()

# The shipped default model (trained on synthetic data, see docs/tuning.md), installed
# beside the package and found by default_model_path().
set(RDMAREPL_DEFAULT_MODEL ${CMAKE_CURRENT_LIST_DIR}/../../models/default_tuning_model.json)
cmake_path(NORMAL_PATH RDMAREPL_DEFAULT_MODEL)
include(GNUInstallDirs)
set_property(SOURCE ${CMAKE_CURRENT_LIST_DIR}/xgboost_tuner.cc APPEND PROPERTY COMPILE_DEFINITIONS
  RDMAREPL_INSTALLED_MODEL="${CMAKE_INSTALL_FULL_DATADIR}/rdmarepl/default_tuning_model.json"
  RDMAREPL_SOURCE_MODEL="${RDMAREPL_DEFAULT_MODEL}")
if(EXISTS ${RDMAREPL_DEFAULT_MODEL})
  install(FILES ${RDMAREPL_DEFAULT_MODEL} DESTINATION ${CMAKE_INSTALL_DATADIR}/rdmarepl)
endif()
# The LSTM tuner's model (tools/rdmarepl-tune/train_lstm.py), found by default_lstm_model_path().
set(RDMAREPL_DEFAULT_LSTM_MODEL ${CMAKE_CURRENT_LIST_DIR}/../../models/default_lstm_model.bin)
cmake_path(NORMAL_PATH RDMAREPL_DEFAULT_LSTM_MODEL)
set_property(SOURCE ${CMAKE_CURRENT_LIST_DIR}/lstm_model.cc APPEND PROPERTY COMPILE_DEFINITIONS
  RDMAREPL_INSTALLED_LSTM_MODEL="${CMAKE_INSTALL_FULL_DATADIR}/rdmarepl/default_lstm_model.bin"
  RDMAREPL_SOURCE_LSTM_MODEL="${RDMAREPL_DEFAULT_LSTM_MODEL}")
if(EXISTS ${RDMAREPL_DEFAULT_LSTM_MODEL})
  install(FILES ${RDMAREPL_DEFAULT_LSTM_MODEL} DESTINATION ${CMAKE_INSTALL_DATADIR}/rdmarepl)
endif()
# TuningModel::Impl holds types of an anonymous namespace, which GCC's -Wsubobject-linkage
# flags once the file is #included into a unity source (the coverage stage of scripts/test
# builds with CMAKE_UNITY_BUILD): it is always compiled on its own.
set_property(SOURCE ${CMAKE_CURRENT_LIST_DIR}/model_xgb.cc PROPERTY SKIP_UNITY_BUILD_INCLUSION ON)
