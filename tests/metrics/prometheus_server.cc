#include "prometheus_server.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "http_get.h"

namespace rdmarepl::testing {

namespace fs = std::filesystem;

std::string PrometheusServer::binary() {
  const char* env = std::getenv("PROMETHEUS_BIN");
  std::string bin = env != nullptr ? env : "/usr/bin/prometheus";
  return ::access(bin.c_str(), X_OK) == 0 ? bin : std::string();
}

PrometheusServer::PrometheusServer(const std::string& scratch_dir,
                                   const std::vector<std::string>& targets)
    : dir_(scratch_dir) {
  fs::create_directories(dir_ + "/data");
  std::ofstream cfg(dir_ + "/prometheus.yml");
  cfg << "global:\n  scrape_interval: 100ms\n  scrape_timeout: 100ms\n  evaluation_interval: 1s\n"
      << "scrape_configs:\n  - job_name: rdmarepl\n    static_configs:\n      - targets: [";
  for (size_t i = 0; i < targets.size(); ++i) cfg << (i ? ", " : "") << "'" << targets[i] << "'";
  cfg << "]\n";
  cfg.close();
  port_ = free_port_range(1);
  const std::string bin = binary();
  const std::vector<std::string> args{
      bin, "--config.file=" + dir_ + "/prometheus.yml", "--storage.tsdb.path=" + dir_ + "/data",
      "--web.listen-address=127.0.0.1:" + std::to_string(port_), "--log.level=warn"};
  pid_ = ::fork();
  if (pid_ == 0) {
    int fd = ::open((dir_ + "/prometheus.log").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    std::vector<char*> argv;
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execv(bin.c_str(), argv.data());
    ::_exit(127);
  }
  for (int i = 0; i < 300; ++i) {
    if (http_get(port_, "/-/ready").status == 200) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  throw std::runtime_error("prometheus did not become ready within 30 s; its log:\n" + log());
}

PrometheusServer::~PrometheusServer() {
  if (pid_ > 0) {
    ::kill(pid_, SIGTERM);
    int status = 0;
    for (int i = 0; i < 100 && ::waitpid(pid_, &status, WNOHANG) == 0; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    if (::waitpid(pid_, &status, WNOHANG) == 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, &status, 0);
    }
  }
  std::error_code ec;
  fs::remove_all(dir_ + "/data", ec);
}

std::string PrometheusServer::log() const {
  std::ifstream in(dir_ + "/prometheus.log");
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

nlohmann::json PrometheusServer::api(const std::string& path) const {
  auto r = http_get(port_, path);
  if (r.status == 0) throw std::runtime_error("prometheus is not answering on its port");
  auto j = nlohmann::json::parse(r.body, nullptr, false);
  if (j.is_discarded()) throw std::runtime_error("prometheus answered no JSON: " + r.body);
  if (j.value("status", "") != "success") {
    throw std::runtime_error("prometheus: " + j.value("errorType", "") + ": " +
                             j.value("error", "") + " (" + path + ")");
  }
  return j["data"];
}

nlohmann::json PrometheusServer::query(const std::string& expr, double time) const {
  std::string path = "/api/v1/query?query=" + url_encode(expr);
  if (time > 0) path += "&time=" + std::to_string(time);
  return api(path);
}

nlohmann::json PrometheusServer::query_range(const std::string& expr, double start, double end,
                                             double step) const {
  return api("/api/v1/query_range?query=" + url_encode(expr) + "&start=" + std::to_string(start) +
             "&end=" + std::to_string(end) + "&step=" + std::to_string(step));
}

nlohmann::json PrometheusServer::targets() const {
  return api("/api/v1/targets");
}

bool PrometheusServer::wait_scraping(size_t count, double timeout_s) const {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  while (std::chrono::steady_clock::now() < deadline) {
    auto active = targets()["activeTargets"];
    size_t scraped = 0;
    for (const auto& t : active)
      if (t.value("lastScrape", "").rfind("0001-", 0) != 0) ++scraped;
    if (active.size() == count && scraped == count) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  return false;
}

}  // namespace rdmarepl::testing
