#include "forest.h"

#include <fmt/format.h>

#include <charconv>
#include <cmath>

#include "json_scan.h"

namespace rdmarepl::tuning {

namespace {

Error bad(std::string_view why) {
  return Error(Errc::corrupt, fmt::format("XGBoost model not understood: {}", why));
}

Result<std::vector<json::Member>> members_of(std::string_view text, std::string_view name) {
  if (text.empty()) return bad(fmt::format("member \"{}\" is missing", name));
  return json::object_members(text);
}

template <class T>
Result<std::vector<T>> numbers(std::string_view text, std::string_view name) {
  auto elems = json::array_elements(text);
  if (!elems) return bad(fmt::format("\"{}\": {}", name, elems.error().message()));
  std::vector<T> out;
  out.reserve(elems->size());
  for (std::string_view e : *elems) {
    T v{};
    auto [p, ec] = std::from_chars(e.data(), e.data() + e.size(), v);
    if (ec != std::errc() || p != e.data() + e.size()) {
      return bad(fmt::format("\"{}\" holds '{}', not a number", name, e));
    }
    out.push_back(v);
  }
  return out;
}

}  // namespace

Result<Forest> Forest::parse(std::string_view text, std::size_t num_features) {
  auto top = json::object_members(text);
  if (!top) return std::move(top).error();
  auto learner = members_of(json::find(*top, "learner"), "learner");
  if (!learner) return std::move(learner).error();
  auto param = members_of(json::find(*learner, "learner_model_param"), "learner_model_param");
  if (!param) return std::move(param).error();
  std::string_view base = json::find(*param, "base_score");
  if (base.size() < 2) return bad("no base_score");
  base = base.substr(1, base.size() - 2);  // a quoted number
  Forest f;
  auto [bp, bec] = std::from_chars(base.data(), base.data() + base.size(), f.base_score_);
  if (bec != std::errc()) return bad(fmt::format("base_score '{}' is not a number", base));
  (void)bp;

  auto gb = members_of(json::find(*learner, "gradient_booster"), "gradient_booster");
  if (!gb) return std::move(gb).error();
  if (json::find(*gb, "name") != "\"gbtree\"") return bad("the booster is not gbtree");
  auto model = members_of(json::find(*gb, "model"), "model");
  if (!model) return std::move(model).error();
  auto trees = json::array_elements(json::find(*model, "trees"));
  if (!trees) return bad(fmt::format("trees: {}", trees.error().message()));

  for (std::string_view t : *trees) {
    auto m = json::object_members(t);
    if (!m) return std::move(m).error();
    auto left = numbers<int32_t>(json::find(*m, "left_children"), "left_children");
    auto right = numbers<int32_t>(json::find(*m, "right_children"), "right_children");
    auto feat = numbers<uint32_t>(json::find(*m, "split_indices"), "split_indices");
    auto cond = numbers<float>(json::find(*m, "split_conditions"), "split_conditions");
    auto dflt = numbers<uint32_t>(json::find(*m, "default_left"), "default_left");
    auto type = numbers<uint32_t>(json::find(*m, "split_type"), "split_type");
    for (auto* r : {&left, &right}) {
      if (!*r) return std::move(*r).error();
    }
    for (auto* r : {&feat, &dflt, &type}) {
      if (!*r) return std::move(*r).error();
    }
    if (!cond) return std::move(cond).error();
    const size_t n = left->size();
    if (n == 0 || right->size() != n || feat->size() != n || cond->size() != n ||
        dflt->size() != n || type->size() != n) {
      return bad("a tree's node arrays differ in length");
    }
    const auto base_index = static_cast<uint32_t>(f.nodes_.size());
    f.roots_.push_back(base_index);
    for (size_t i = 0; i < n; ++i) {
      Node node{(*left)[i], (*right)[i], (*feat)[i], (*dflt)[i], (*cond)[i]};
      if (node.left >= 0) {
        // Children come after their parent in XGBoost's layout; requiring it rules out cycles.
        if (static_cast<size_t>(node.left) <= i || static_cast<size_t>(node.left) >= n ||
            node.right < 0 || static_cast<size_t>(node.right) <= i ||
            static_cast<size_t>(node.right) >= n || node.feature >= num_features ||
            (*type)[i] != 0) {
          return bad(fmt::format("tree {} node {} is malformed or not a numerical split",
                                 f.roots_.size() - 1, i));
        }
        node.left += static_cast<int32_t>(base_index);
        node.right += static_cast<int32_t>(base_index);
      }
      f.nodes_.push_back(node);
    }
  }
  if (f.roots_.empty()) return bad("the model has no trees");
  return f;
}

float Forest::predict(const float* row) const noexcept {
  float sum = base_score_;
  for (uint32_t root : roots_) {
    const Node* n = &nodes_[root];
    while (n->left >= 0) {
      float x = row[n->feature];
      bool go_left = std::isnan(x) ? n->default_left != 0 : x < n->value;
      n = &nodes_[static_cast<size_t>(go_left ? n->left : n->right)];
    }
    sum += n->value;
  }
  return sum;
}

}  // namespace rdmarepl::tuning
