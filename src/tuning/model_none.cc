// TuningModel for builds without XGBoost: every operation reports that clearly.
#include "rdmarepl/tuning/model.h"

namespace rdmarepl::tuning {

namespace {
Error unsupported() {
  return Error(Errc::unsupported,
               "this build of rdmarepl has no XGBoost (RDMAREPL_HAVE_XGBOOST is 0): install "
               "libxgboost-dev and rebuild, or use the heuristic or static tuner");
}
}  // namespace

struct TuningModel::Impl {};

bool TuningModel::available() noexcept {
  return false;
}
TuningModel::TuningModel(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
TuningModel::TuningModel(TuningModel&&) noexcept = default;
TuningModel& TuningModel::operator=(TuningModel&&) noexcept = default;
TuningModel::~TuningModel() = default;
uint64_t TuningModel::version() const noexcept {
  return 0;
}
int TuningModel::trees_per_target() const noexcept {
  return 0;
}
Result<TuningModel> TuningModel::train(std::span<const Sample>, const TrainOptions&) {
  return unsupported();
}
Result<TuningModel> TuningModel::load(const std::string&) {
  return unsupported();
}
Result<TuningModel> TuningModel::from_json(std::string_view, std::string_view) {
  return unsupported();
}
Status TuningModel::save(const std::string&) const {
  return unsupported();
}
Result<std::string> TuningModel::to_json() const {
  return unsupported();
}
Result<TuningModel> TuningModel::clone() const {
  return unsupported();
}
Status TuningModel::predict(const float*, std::size_t, Prediction*, Engine) const {
  return unsupported();
}
Status TuningModel::update(std::span<const Sample>, const UpdateOptions&) {
  return unsupported();
}

}  // namespace rdmarepl::tuning
