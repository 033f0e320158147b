// EtcdCoordinator (etcd_coordinator.h): each call is one POST to etcd's v3 JSON gateway.
// Bytes fields are base64 (libsodium's codec), int64 fields are strings. The leadership key
// of an election is `election` itself, created by a transaction that succeeds only when it
// does not exist; its create revision is the epoch.
#include "rdmarepl/coordination/etcd_coordinator.h"

#include <curl/curl.h>
#include <fmt/format.h>
#include <sodium.h>

#include <atomic>
#include <mutex>
#include <nlohmann/json.hpp>

namespace rdmarepl::coordination {
namespace {

using nlohmann::json;

std::string b64(std::string_view s) {
  std::string out(sodium_base64_ENCODED_LEN(s.size(), sodium_base64_VARIANT_ORIGINAL), '\0');
  sodium_bin2base64(out.data(), out.size(), reinterpret_cast<const unsigned char*>(s.data()),
                    s.size(), sodium_base64_VARIANT_ORIGINAL);
  out.resize(std::char_traits<char>::length(out.c_str()));
  return out;
}

Result<std::string> unb64(const std::string& s) {
  std::string out(s.size(), '\0');
  size_t len = 0;
  if (sodium_base642bin(reinterpret_cast<unsigned char*>(out.data()), out.size(), s.data(),
                        s.size(), nullptr, &len, nullptr, sodium_base64_VARIANT_ORIGINAL) != 0)
    return Error(Errc::protocol_error, fmt::format("etcd sent invalid base64 '{}'", s));
  out.resize(len);
  return out;
}

// int64 fields arrive as strings; absent means 0.
uint64_t u64(const json& j, const char* field) {
  auto it = j.find(field);
  if (it == j.end()) return 0;
  if (it->is_string()) return std::stoull(it->get<std::string>());
  return it->get<uint64_t>();
}

// The key after every key that starts with `prefix` (etcd's range_end for a prefix).
std::string prefix_end(std::string_view prefix) {
  std::string end(prefix);
  while (!end.empty()) {
    auto& c = end.back();
    if (static_cast<unsigned char>(c) < 0xff) {
      ++c;
      return end;
    }
    end.pop_back();
  }
  return std::string(1, '\0');  // every key
}

Result<KeyValue> parse_kv(const json& kv) {
  KeyValue out;
  auto k = unb64(kv.value("key", ""));
  if (!k) return std::move(k).error();
  auto v = unb64(kv.value("value", ""));
  if (!v) return std::move(v).error();
  out.key = std::move(*k);
  out.value = std::move(*v);
  out.create_revision = u64(kv, "create_revision");
  out.mod_revision = u64(kv, "mod_revision");
  out.lease = static_cast<LeaseId>(u64(kv, "lease"));
  return out;
}

size_t collect(char* data, size_t size, size_t n, void* out) {
  static_cast<std::string*>(out)->append(data, size * n);
  return size * n;
}

class EtcdCoordinator final : public Coordinator {
 public:
  explicit EtcdCoordinator(EtcdOptions o) : o_(std::move(o)) {
    static std::once_flag once;
    std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
  }
  ~EtcdCoordinator() override {
    for (CURL* h : idle_) curl_easy_cleanup(h);
  }
  EtcdCoordinator(const EtcdCoordinator&) = delete;
  EtcdCoordinator& operator=(const EtcdCoordinator&) = delete;

  Result<std::pair<LeaseId, std::chrono::milliseconds>> grant_lease(
      std::chrono::milliseconds ttl) override {
    if (ttl < std::chrono::seconds(1))
      return Error(Errc::invalid_argument,
                   fmt::format("a lease TTL of {} ms is below etcd's 1 s granularity (0 would "
                               "mean a lease nobody renews); ask for at least 1000 ms",
                               ttl.count()));
    const auto secs = (ttl.count() + 999) / 1000;
    auto r = post("/v3/lease/grant", json{{"TTL", secs}});
    if (!r) return std::move(r).error();
    if (r->contains("error"))
      return Error(Errc::io_error, fmt::format("{}: granting a lease failed: {}", describe(),
                                               r->value("error", std::string())));
    return std::make_pair(static_cast<LeaseId>(u64(*r, "ID")),
                          std::chrono::milliseconds(u64(*r, "TTL") * 1000));
  }

  Result<std::chrono::milliseconds> keep_alive(LeaseId lease) override {
    auto r = post("/v3/lease/keepalive", json{{"ID", std::to_string(lease)}});
    if (!r) return std::move(r).error();
    const json& res = r->contains("result") ? (*r)["result"] : *r;
    const uint64_t ttl = u64(res, "TTL");
    if (ttl == 0)
      return Error(Errc::not_found, fmt::format("{}: lease {:x} has expired; the keys bound to "
                                                "it are gone",
                                                describe(), lease));
    return std::chrono::milliseconds(ttl * 1000);
  }

  Status revoke_lease(LeaseId lease) override {
    auto r = post("/v3/lease/revoke", json{{"ID", std::to_string(lease)}});
    if (!r) return std::move(r).error();
    return ok_status();  // an unknown lease answers an error body: it is gone either way
  }

  Result<Leader> campaign(std::string_view election, std::string_view value,
                          LeaseId lease) override {
    const std::string k = b64(election);
    json req = {
        {"compare",
         json::array(
             {{{"key", k}, {"target", "CREATE"}, {"create_revision", "0"}, {"result", "EQUAL"}}})},
        {"success",
         json::array({{{"request_put",
                        {{"key", k}, {"value", b64(value)}, {"lease", std::to_string(lease)}}}}})},
        {"failure", json::array({{{"request_range", {{"key", k}}}}})}};
    auto r = post("/v3/kv/txn", req);
    if (!r) return std::move(r).error();
    if (r->value("succeeded", false))
      return Leader{u64((*r)["header"], "revision"), std::string(value), lease};
    // Lost: the incumbent is in the failure branch's range (or nobody, if it vanished).
    for (const auto& resp : r->value("responses", json::array())) {
      const auto& kvs = resp.value("response_range", json::object()).value("kvs", json::array());
      if (kvs.empty()) continue;
      auto kv = parse_kv(kvs[0]);
      if (!kv) return std::move(kv).error();
      return Leader{kv->create_revision, std::move(kv->value), kv->lease};
    }
    return Leader{};
  }

  Status resign(std::string_view election, uint64_t epoch) override {
    const std::string k = b64(election);
    json req = {{"compare", json::array({{{"key", k},
                                          {"target", "CREATE"},
                                          {"create_revision", std::to_string(epoch)},
                                          {"result", "EQUAL"}}})},
                {"success", json::array({{{"request_delete_range", {{"key", k}}}}})}};
    auto r = post("/v3/kv/txn", req);
    if (!r) return std::move(r).error();
    return ok_status();
  }

  Result<Leader> leader(std::string_view election) override {
    auto kv = get(election);
    if (!kv) return std::move(kv).error();
    if (!kv->has_value()) return Leader{};
    return Leader{(*kv)->create_revision, std::move((*kv)->value), (*kv)->lease};
  }

  Result<bool> compare_and_put(std::string_view key, std::string_view value,
                               uint64_t expected_mod_revision, LeaseId lease) override {
    const std::string k = b64(key);
    json put = {{"key", k}, {"value", b64(value)}};
    if (lease != 0) put["lease"] = std::to_string(lease);
    json req = {{"compare", json::array({{{"key", k},
                                          {"target", "MOD"},
                                          {"mod_revision", std::to_string(expected_mod_revision)},
                                          {"result", "EQUAL"}}})},
                {"success", json::array({{{"request_put", put}}})}};
    auto r = post("/v3/kv/txn", req);
    if (!r) return std::move(r).error();
    return r->value("succeeded", false);
  }

  Status put(std::string_view key, std::string_view value, LeaseId lease) override {
    json req = {{"key", b64(key)}, {"value", b64(value)}};
    if (lease != 0) req["lease"] = std::to_string(lease);
    auto r = post("/v3/kv/put", req);
    if (!r) return std::move(r).error();
    if (r->contains("error"))
      return Error(Errc::io_error, fmt::format("{}: put {} failed: {}", describe(), key,
                                               r->value("error", std::string())));
    return ok_status();
  }

  Result<std::optional<KeyValue>> get(std::string_view key) override {
    auto r = post("/v3/kv/range", json{{"key", b64(key)}});
    if (!r) return std::move(r).error();
    const auto kvs = r->value("kvs", json::array());
    if (kvs.empty()) return std::optional<KeyValue>();
    auto kv = parse_kv(kvs[0]);
    if (!kv) return std::move(kv).error();
    return std::optional<KeyValue>(std::move(*kv));
  }

  Result<std::vector<KeyValue>> list(std::string_view prefix) override {
    auto r =
        post("/v3/kv/range", json{{"key", b64(prefix)}, {"range_end", b64(prefix_end(prefix))}});
    if (!r) return std::move(r).error();
    std::vector<KeyValue> out;
    for (const auto& j : r->value("kvs", json::array())) {
      auto kv = parse_kv(j);
      if (!kv) return std::move(kv).error();
      out.push_back(std::move(*kv));
    }
    return out;
  }

  Status erase_prefix(std::string_view prefix) override {
    auto r = post("/v3/kv/deleterange",
                  json{{"key", b64(prefix)}, {"range_end", b64(prefix_end(prefix))}});
    if (!r) return std::move(r).error();
    return ok_status();
  }

  [[nodiscard]] std::string describe() const override {
    return fmt::format("etcd at {}", fmt::join(o_.endpoints, ","));
  }

 private:
  // POSTs `body` to `path` on the first endpoint that answers; the reply parsed.
  Result<json> post(const char* path, const json& body) {
    const std::string payload = body.dump();
    std::string last;
    for (size_t i = 0; i < o_.endpoints.size(); ++i) {
      const size_t at = (first_.load(std::memory_order_relaxed) + i) % o_.endpoints.size();
      std::string reply;
      long code = 0;  // NOLINT(google-runtime-int): curl's type
      CURLcode rc = perform(o_.endpoints[at] + path, payload, reply, code);
      if (rc == CURLE_OK && code != 0 && code < 500) {
        first_.store(at, std::memory_order_relaxed);
        try {
          return json::parse(reply);
        } catch (const json::exception& e) {
          return Error(Errc::protocol_error,
                       fmt::format("{}{} answered what is not JSON ({}): {}", o_.endpoints[at],
                                   path, e.what(), reply.substr(0, 200)));
        }
      }
      last = rc != CURLE_OK
                 ? fmt::format("{}: {}", o_.endpoints[at], curl_easy_strerror(rc))
                 : fmt::format("{}: HTTP {} {}", o_.endpoints[at], code, reply.substr(0, 200));
    }
    return Error(Errc::connection_refused,
                 fmt::format("no etcd endpoint answered {} within {} ms (last: {}); check that "
                             "etcd runs and that EtcdOptions::endpoints names its client URLs",
                             path, o_.request_timeout.count(), last));
  }

  CURLcode perform(const std::string& url, const std::string& payload, std::string& reply,
                   long& code) {  // NOLINT(google-runtime-int)
    CURL* h = take();
    if (h == nullptr) return CURLE_FAILED_INIT;
    curl_slist* headers = curl_slist_append(nullptr, "Content-Type: application/json");
    curl_easy_setopt(h, CURLOPT_URL, url.c_str());
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, payload.c_str());
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, static_cast<long>(payload.size()));  // NOLINT
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, &collect);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &reply);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS,
                     static_cast<long>(o_.request_timeout.count()));  // NOLINT
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_PROXY, "");
    const CURLcode rc = curl_easy_perform(h);
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
    curl_slist_free_all(headers);
    give(h);
    return rc;
  }

  // One easy handle per concurrent call, kept for reuse (its connection stays open).
  CURL* take() {
    {
      std::lock_guard<std::mutex> g(mu_);
      if (!idle_.empty()) {
        CURL* h = idle_.back();
        idle_.pop_back();
        return h;
      }
    }
    return curl_easy_init();
  }
  void give(CURL* h) {
    std::lock_guard<std::mutex> g(mu_);
    idle_.push_back(h);
  }

  EtcdOptions o_;
  std::atomic<size_t> first_{0};
  std::mutex mu_;
  std::vector<CURL*> idle_;
};

}  // namespace

Status validate(const EtcdOptions& o) {
  if (o.endpoints.empty())
    return Error(Errc::invalid_argument,
                 "EtcdOptions::endpoints is empty; name at least one etcd client URL, e.g. "
                 "http://127.0.0.1:2379");
  for (const auto& e : o.endpoints)
    if (e.rfind("http://", 0) != 0 && e.rfind("https://", 0) != 0)
      return Error(Errc::invalid_argument,
                   fmt::format("EtcdOptions::endpoints: '{}' is not a URL; write it as "
                               "http://host:port",
                               e));
  if (o.request_timeout < std::chrono::milliseconds(10))
    return Error(Errc::invalid_argument,
                 fmt::format("EtcdOptions::request_timeout = {} ms; use at least 10 ms",
                             o.request_timeout.count()));
  return ok_status();
}

Result<std::unique_ptr<Coordinator>> make_etcd_coordinator(const EtcdOptions& options) {
  if (auto st = validate(options); !st) return std::move(st).error();
  if (sodium_init() < 0)
    return Error(Errc::unsupported, "libsodium failed to initialise (base64 for etcd)");
  return std::unique_ptr<Coordinator>(std::make_unique<EtcdCoordinator>(options));
}

}  // namespace rdmarepl::coordination
