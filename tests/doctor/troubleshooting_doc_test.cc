// docs/TROUBLESHOOTING.md cannot drift from the library: every log line it quotes (the
// ```log blocks) must be made of the library's own message templates (string literals of
// src/ and include/, strerror texts, status names) with only single-token values between
// them; and the TCP errors are produced here for real and must be quoted, numbers aside.
// (The verbs errors are produced on rxe0 by rxe_troubleshooting.)
#include <catch2/catch.hpp>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <regex>
#include <sstream>

#include "rdmarepl/core/clock.h"
#include "rdmarepl/transport/tcp/tcp_transport.h"
#include "transport/pair_util.h"

using namespace rdmarepl;
using namespace rdmarepl::transport;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// The quoted log lines: every line inside a ```log fence.
std::vector<std::string> quoted_lines() {
  std::vector<std::string> out;
  std::istringstream in(slurp(RDMAREPL_TROUBLESHOOTING_DOC));
  std::string line;
  bool inside = false;
  while (std::getline(in, line)) {
    if (line.rfind("```", 0) == 0) {
      inside = !inside && line == "```log";
      continue;
    }
    if (inside && !line.empty()) out.push_back(line);
  }
  return out;
}

// String literals of one C++ file, adjacent literals joined (as the compiler does).
void literals_of(const std::string& text, std::vector<std::string>& out) {
  static const std::regex lit(R"re("((?:[^"\\\n]|\\.)*)"(\s*(?://[^\n]*\n\s*)*))re");
  std::string joined;
  size_t joined_end = std::string::npos;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), lit); it != std::sregex_iterator();
       ++it) {
    const auto pos = static_cast<size_t>(it->position(0));
    std::string s = std::regex_replace((*it)[1].str(), std::regex(R"(\\(.))"), "$1");
    if (pos != joined_end && !joined.empty()) {
      out.push_back(joined);
      joined.clear();
    }
    joined += s;
    joined_end = pos + static_cast<size_t>(it->length(0));
  }
  if (!joined.empty()) out.push_back(joined);
}

// Constant pieces of the library's messages: literals split at their fmt placeholders,
// strerror texts, and (as literals) the status names.
std::vector<std::vector<std::string>> templates() {
  std::vector<std::string> lits;
  for (const char* dir : {"src", "include", "tools"})
    for (const auto& e : fs::recursive_directory_iterator(fs::path(RDMAREPL_SOURCE_DIR) / dir))
      if (e.path().extension() == ".cc" || e.path().extension() == ".h")
        literals_of(slurp(e.path()), lits);
  for (int err = 1; err < 134; ++err) lits.emplace_back(std::strerror(err));
  std::vector<std::vector<std::string>> out;
  static const std::regex placeholder(R"(\{[^{}]*\}|%[-.*0-9l]*[a-z])");
  for (const auto& l : lits) {
    std::vector<std::string> pieces;
    for (std::sregex_token_iterator it(l.begin(), l.end(), placeholder, -1), end; it != end; ++it)
      if (it->length() >= 4) pieces.push_back(*it);
    if (!pieces.empty()) out.push_back(std::move(pieces));
  }
  return out;
}

// The parts of `line` no template explains, as a string with '|' where covered text was.
std::string unexplained(const std::string& line, const std::vector<std::vector<std::string>>& ts) {
  std::vector<bool> covered(line.size(), false);
  for (const auto& pieces : ts) {
    std::vector<size_t> at;
    size_t from = 0;
    for (const auto& p : pieces) {
      auto pos = line.find(p, from);
      if (pos == std::string::npos) break;
      at.push_back(pos);
      from = pos + p.size();
    }
    if (at.size() != pieces.size()) continue;
    for (size_t i = 0; i < pieces.size(); ++i)
      std::fill_n(covered.begin() + static_cast<long>(at[i]), pieces[i].size(), true);
  }
  // Quoted names and driver texts ('leader', "RNR retry counter exceeded") are values.
  static const std::regex quoted_value(R"("[^"]*"|'[^']*')");
  for (auto it = std::sregex_iterator(line.begin(), line.end(), quoted_value);
       it != std::sregex_iterator(); ++it)
    std::fill_n(covered.begin() + it->position(0), it->length(0), true);
  std::string rest;
  for (size_t i = 0; i < line.size(); ++i) rest += covered[i] ? '|' : line[i];
  return rest;
}

// Two words in a row that no template explains: text the library does not print.
bool has_foreign_words(const std::string& rest) {
  static const std::regex two_words(R"([A-Za-z]{3,} [A-Za-z]{3,})");
  return std::regex_search(rest, two_words);
}

std::string norm(std::string s) {
  s = std::regex_replace(s, std::regex("'[^']*'"), "'#'");
  s = std::regex_replace(s, std::regex("0x[0-9a-f]+"), "#");
  return std::regex_replace(s, std::regex("[0-9]+"), "#");
}

bool quoted(const std::string& message) {
  const std::string n = norm(message);
  for (const auto& l : quoted_lines())
    if (norm(l).find(n) != std::string::npos) return true;
  return false;
}

}  // namespace

TEST_CASE("troubleshooting: every quoted line is the library's own text", "[doctor][docs]") {
  const auto lines = quoted_lines();
  REQUIRE(lines.size() >= 10);
  const auto ts = templates();
  for (const auto& line : lines) {
    const std::string rest = unexplained(line, ts);
    INFO(line << "\nnot from the library: " << rest);
    CHECK_FALSE(has_foreign_words(rest));
  }
  // The check itself bites: a reworded message is caught.
  CHECK(has_foreign_words(
      unexplained("the peer did not answer quickly enough; please check the cable", ts)));
}

TEST_CASE("troubleshooting: the TCP errors produced here are quoted", "[doctor][docs]") {
  tcp::TcpTransport t;
  // Handshake refused for a bad key, on both sides.
  auto l = t.listen(Endpoint{"127.0.0.1", 0});
  REQUIRE(l.ok());
  ConnectionOptions so, co;
  so.node_id = "follower-1";
  so.pre_shared_key = "right key";
  co.node_id = "leader";
  co.pre_shared_key = "wrong key";
  auto acc = std::async(std::launch::async, [&] { return (*l)->accept(so, 10s); });
  auto c = t.connect((*l)->local_endpoint(), co);
  auto s = acc.get();
  REQUIRE_FALSE(c.ok());
  REQUIRE_FALSE(s.ok());
  INFO(c.error().message() << "\n" << s.error().message());
  CHECK(quoted(c.error().message()));
  CHECK(quoted(s.error().message()));

  // A write that finds no receive posted (RNR).
  std::vector<uint8_t> dst(4096), src(4096);
  auto dmr = t.register_memory(dst.data(), dst.size(), Access::local_write | Access::remote_write);
  auto smr = t.register_memory(src.data(), src.size(), Access::local_write);
  REQUIRE((dmr.ok() && smr.ok()));
  ConnectionOptions rso, rco;
  rso.node_id = "follower-1";
  rso.regions = {(*dmr)->remote()};
  rco.node_id = "leader";
  auto p = testing::make_pair(t, rco, rso);
  WriteRequest w{
      1, src.data(), 64, (*smr)->region().keys.lkey, (*dmr)->remote().addr, (*dmr)->remote().rkey,
      5, true};
  REQUIRE(p.client->post_writes({&w, 1}) == PostStatus::ok);
  std::vector<Completion> cc, sc;
  REQUIRE(testing::pump(p, cc, sc, [&] { return !p.client->healthy() && !p.server->healthy(); }));
  INFO(p.client->error().message() << "\n" << p.server->error().message());
  CHECK(quoted(p.client->error().message()));
  CHECK(quoted(p.server->error().message()));

  // The peer goes away: EOF.
  auto q = testing::make_pair(t, rco, rso);
  q.server.reset();
  REQUIRE(q.client->post_writes({&w, 1}) == PostStatus::ok);
  Completion buf[8];
  for (auto end = Deadline::after(10s); q.client->healthy() && !end.expired();) {
    (void)q.client->wait(100ms);
    (void)q.client->poll(buf);
  }
  REQUIRE_FALSE(q.client->healthy());
  INFO(q.client->error().message());
  CHECK(quoted(q.client->error().message()));
}
