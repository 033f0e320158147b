#include "transport/bootstrap/handshake.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sodium.h>

#include <algorithm>
#include <array>
#include <chrono>

#include "rdmarepl/core/byte_order.h"
#include "transport/bootstrap/socket.h"

namespace rdmarepl::transport::bootstrap {
namespace {

// Message framing: type u8 | flags u8 | reserved u16 | body length u32 (docs/wire_format.md).
constexpr size_t kHeaderBytes = 8;
enum class Msg : uint8_t { open = 1, proof = 2, hello = 3, reject = 4, done = 5 };

constexpr uint32_t kMagic = 0x52444d52;  // "RDMR"
constexpr size_t kNonceBytes = 32;
constexpr size_t kOpenBytes = 4 + 2 + 1 + 1 + kNonceBytes;
constexpr uint8_t kFlagKey = 0x01;  // OPEN flags: the sender has a pre-shared key
constexpr size_t kMacBytes = crypto_auth_hmacsha512256_BYTES;
static_assert(kMacBytes == 32);
constexpr size_t kMaxReasonBytes = 1024;
// A refused peer is told why with this much patience at most: it may already be gone.
constexpr auto kRejectGrace = std::chrono::milliseconds(500);
// Open + Proof + Hello (each MAC'd) + a Reject: more than any side sends (handshake.h).
static_assert(3 * kHeaderBytes + kOpenBytes + kMaxHelloBytes + 2 * kMacBytes + kHeaderBytes + 2 +
                  kMaxReasonBytes <=
              kMaxBytesSent);

constexpr std::string_view kLabelClientProof = "rdmarepl/1 initiator proof";
constexpr std::string_view kLabelServerHello = "rdmarepl/1 responder hello";
constexpr std::string_view kLabelClientHello = "rdmarepl/1 initiator hello";
// Session keys: one per direction, over the whole transcript (docs/wire_format.md).
constexpr std::string_view kLabelKeyFromInitiator = "rdmarepl/1 key initiator to responder";
constexpr std::string_view kLabelKeyFromResponder = "rdmarepl/1 key responder to initiator";
constexpr std::string_view kLabelDigestKey = "rdmarepl/1 message digest key";
static_assert(kMacBytes == kSessionKeyBytes);

std::string_view to_string(Msg m) {
  switch (m) {
    case Msg::open:
      return "Open";
    case Msg::proof:
      return "Proof";
    case Msg::hello:
      return "Hello";
    case Msg::reject:
      return "Reject";
    case Msg::done:
      return "Done";
  }
  return "unknown";
}

class Session {
 public:
  Session(BytePipe& pipe, Role role, std::string_view key, Deadline deadline,
          const PeerCheck* check)
      : pipe_(pipe),
        role_(role),
        key_(key),
        deadline_(deadline),
        peer_(pipe.peer()),
        check_(check) {}

  Result<Hello> run(const Hello& mine, SessionKeys* keys) {
    auto result = role_ == Role::initiator ? run_initiator(mine) : run_responder(mine);
    if (!result.ok()) return decorate(std::move(result).error());
    if (keys != nullptr) derive_keys(*keys);
    return result;
  }

 private:
  Result<Hello> run_initiator(const Hello& mine) {
    RDMAREPL_TRY(send_open(mine.kind));
    RDMAREPL_TRY(recv_open(mine.kind));
    RDMAREPL_TRY(send(Msg::proof, {}, kLabelClientProof));
    auto body = recv(Msg::hello, kLabelServerHello);
    if (!body) return std::move(body).error();
    auto theirs = check_hello(*body, mine.kind);
    if (!theirs) return refuse(std::move(theirs).error());
    auto encoded = serialize_hello(mine);
    if (!encoded) return std::move(encoded).error();
    RDMAREPL_TRY(send(Msg::hello, *encoded, kLabelClientHello));
    RDMAREPL_TRY(recv(Msg::done, {}));
    return theirs;
  }

  Result<Hello> run_responder(const Hello& mine) {
    RDMAREPL_TRY(recv_open(mine.kind));
    RDMAREPL_TRY(send_open(mine.kind));
    RDMAREPL_TRY(recv(Msg::proof, kLabelClientProof));
    auto encoded = serialize_hello(mine);
    if (!encoded) return std::move(encoded).error();
    RDMAREPL_TRY(send(Msg::hello, *encoded, kLabelServerHello));
    auto body = recv(Msg::hello, kLabelClientHello);
    if (!body) return std::move(body).error();
    auto theirs = check_hello(*body, mine.kind);
    if (!theirs) return refuse(std::move(theirs).error());
    // The layer above may still refuse this peer; it is told why instead of Done.
    if (check_ != nullptr && *check_) {
      Status st = (*check_)(theirs->node_id, peer_, theirs->app_data);
      if (!st.ok()) return refuse(st.error());
    }
    RDMAREPL_TRY(send(Msg::done, {}, {}));
    return theirs;
  }

  bool keyed() const noexcept { return !key_.empty(); }

  // After a successful keyed handshake both sides hold the same transcript (every message,
  // Done included, in wire order): each direction's key is the MAC of its label over it;
  // the digest key is the MAC of its label alone.
  void derive_keys(SessionKeys& keys) const {
    keys = SessionKeys{};
    if (!keyed()) return;
    const auto from_initiator = mac(kLabelKeyFromInitiator, {});
    const auto from_responder = mac(kLabelKeyFromResponder, {});
    const bool initiator = role_ == Role::initiator;
    std::copy(from_initiator.begin(), from_initiator.end(),
              (initiator ? keys.send : keys.recv).begin());
    std::copy(from_responder.begin(), from_responder.end(),
              (initiator ? keys.recv : keys.send).begin());
    // Not from the transcript: the same on every connection with this pre-shared key.
    crypto_auth_hmacsha512256_state st;
    crypto_auth_hmacsha512256_init(&st, reinterpret_cast<const unsigned char*>(key_.data()),
                                   key_.size());
    crypto_auth_hmacsha512256_update(&st,
                                     reinterpret_cast<const unsigned char*>(kLabelDigestKey.data()),
                                     kLabelDigestKey.size());
    crypto_auth_hmacsha512256_final(&st, keys.digest.data());
    sodium_memzero(&st, sizeof st);
    keys.set = true;
  }

  Status send_open(TransportKind kind) {
    std::array<uint8_t, kOpenBytes> body{};
    store_be32(body.data(), kMagic);
    store_be16(body.data() + 4, kProtocolVersion);
    body[6] = static_cast<uint8_t>(kind);
    body[7] = keyed() ? kFlagKey : 0;
    randombytes_buf(body.data() + 8, kNonceBytes);
    return send(Msg::open, body, {});
  }

  Status recv_open(TransportKind kind) {
    auto body = recv(Msg::open, {});
    if (!body) return std::move(body).error();
    const uint8_t* p = body->data();
    if (load_be32(p) != kMagic)
      return Error(Errc::protocol_error,
                   "the Open message has a bad magic number; the peer is "
                   "not an rdmarepl node");
    uint16_t version = load_be16(p + 4);
    if (version != kProtocolVersion) {
      return refuse(Error(Errc::unsupported,
                          fmt::format("the peer speaks protocol version {}, we speak version {}; "
                                      "run the same rdmarepl release on both nodes",
                                      version, kProtocolVersion)));
    }
    if (p[6] != static_cast<uint8_t>(kind)) {
      return refuse(
          Error(Errc::unsupported, fmt::format("the peer wants a transport of kind {}, we are {}; "
                                               "configure the same transport on both nodes",
                                               p[6], to_string(kind))));
    }
    bool peer_keyed = (p[7] & kFlagKey) != 0;
    if ((p[7] & ~kFlagKey) != 0)
      return Error(Errc::protocol_error, fmt::format("unknown Open flags 0x{:02x}", p[7]));
    if (peer_keyed != keyed()) {
      return refuse(Error(
          Errc::auth_failed,
          keyed() ? "authentication failed: we require a pre-shared key but the peer has none; "
                    "configure the same pre_shared_key on both nodes"
                  : "authentication failed: the peer requires a pre-shared key but we have none; "
                    "configure the same pre_shared_key on both nodes"));
    }
    return ok_status();
  }

  Result<Hello> check_hello(std::span<const uint8_t> body, TransportKind kind) {
    auto hello = parse_hello(body);
    if (!hello) return hello;
    if (hello->kind != kind) {
      return Error(Errc::unsupported, fmt::format("the peer's Hello is for transport {}, we are {}",
                                                  to_string(hello->kind), to_string(kind)));
    }
    peer_node_ = hello->node_id;
    return hello;
  }

  // MAC over label || transcript || extra (the message being authenticated, without its MAC).
  std::array<uint8_t, kMacBytes> mac(std::string_view label, std::span<const uint8_t> extra) const {
    crypto_auth_hmacsha512256_state st;
    crypto_auth_hmacsha512256_init(&st, reinterpret_cast<const unsigned char*>(key_.data()),
                                   key_.size());
    crypto_auth_hmacsha512256_update(&st, reinterpret_cast<const unsigned char*>(label.data()),
                                     label.size());
    crypto_auth_hmacsha512256_update(&st, transcript_.data(), transcript_.size());
    crypto_auth_hmacsha512256_update(&st, extra.data(), extra.size());
    std::array<uint8_t, kMacBytes> out{};
    crypto_auth_hmacsha512256_final(&st, out.data());
    sodium_memzero(&st, sizeof st);
    return out;
  }

  // Sends one message; with a label (and a key) a MAC over transcript + message is appended.
  Status send(Msg type, std::span<const uint8_t> body, std::string_view label) {
    bool with_mac = keyed() && !label.empty();
    std::vector<uint8_t> msg(kHeaderBytes + body.size() + (with_mac ? kMacBytes : 0));
    msg[0] = static_cast<uint8_t>(type);
    store_be32(msg.data() + 4, static_cast<uint32_t>(msg.size() - kHeaderBytes));
    std::copy(body.begin(), body.end(), msg.begin() + kHeaderBytes);
    if (with_mac) {
      auto m = mac(label, std::span(msg).first(kHeaderBytes + body.size()));
      std::copy(m.begin(), m.end(), msg.end() - kMacBytes);
    }
    RDMAREPL_TRY(pipe_.send(msg, deadline_));
    transcript_.insert(transcript_.end(), msg.begin(), msg.end());
    return ok_status();
  }

  size_t max_body(Msg type) const noexcept {
    switch (type) {
      case Msg::open:
        return kOpenBytes;
      case Msg::proof:
        return keyed() ? kMacBytes : 0;
      case Msg::hello:
        return kMaxHelloBytes + (keyed() ? kMacBytes : 0);
      case Msg::reject:
        return 2 + kMaxReasonBytes;
      case Msg::done:
        return 0;
    }
    return 0;
  }

  // Receives one message of type `want` (a Reject is turned into the peer's error) and
  // verifies its MAC when `label` is set and we have a key. Returns the body without MAC.
  Result<std::vector<uint8_t>> recv(Msg want, std::string_view label) {
    std::array<uint8_t, kHeaderBytes> header{};
    RDMAREPL_TRY(pipe_.recv_exact(header, deadline_));
    uint8_t type = header[0];
    uint32_t length = load_be32(header.data() + 4);
    bool known = type >= static_cast<uint8_t>(Msg::open) && type <= static_cast<uint8_t>(Msg::done);
    if (!known || header[1] != 0 || header[2] != 0 || header[3] != 0) {
      return Error(Errc::protocol_error,
                   fmt::format("expected a handshake {} message but received bytes "
                               "{:02x}: this is not an rdmarepl peer (or not protocol version {})",
                               to_string(want), fmt::join(header, " "), kProtocolVersion));
    }
    Msg got = static_cast<Msg>(type);
    if (got != want && got != Msg::reject) {
      return Error(Errc::protocol_error,
                   fmt::format("expected a handshake {} message, received {}", to_string(want),
                               to_string(static_cast<Msg>(type))));
    }
    bool exact = got == Msg::open || got == Msg::proof || got == Msg::done;
    if (length > max_body(got) || (exact && length != max_body(got))) {
      if (got == Msg::proof) {
        return Error(
            Errc::auth_failed,
            fmt::format("authentication failed: the peer's proof has {} bytes, expected {}", length,
                        max_body(got)));
      }
      return Error(Errc::protocol_error,
                   fmt::format("handshake {} message of {} bytes exceeds its limit of {}",
                               to_string(static_cast<Msg>(type)), length, max_body(got)));
    }
    std::vector<uint8_t> body(length);
    RDMAREPL_TRY(pipe_.recv_exact(body, deadline_));
    if (got == Msg::reject) return rejected(body);

    std::vector<uint8_t> bytes(header.begin(), header.end());
    bytes.insert(bytes.end(), body.begin(), body.end());
    if (keyed() && !label.empty()) {
      if (body.size() < kMacBytes) {
        return refuse(Error(Errc::auth_failed,
                            "authentication failed: the peer's message carries no MAC; "
                            "configure the same pre_shared_key on both nodes"));
      }
      auto expected = mac(label, std::span(bytes).first(bytes.size() - kMacBytes));
      if (sodium_memcmp(expected.data(), body.data() + body.size() - kMacBytes, kMacBytes) != 0) {
        return refuse(Error(Errc::auth_failed,
                            "authentication failed: the peer does not know our pre-shared key "
                            "(or replayed an old handshake); configure the same pre_shared_key "
                            "on both nodes"));
      }
      body.resize(body.size() - kMacBytes);
    }
    transcript_.insert(transcript_.end(), bytes.begin(), bytes.end());
    return body;
  }

  Error rejected(std::span<const uint8_t> body) const {
    Errc code = Errc::connection_refused;
    std::string reason = "no reason given";
    if (body.size() >= 2) {
      uint16_t c = load_be16(body.data());
      if (c == static_cast<uint16_t>(Errc::auth_failed) ||
          c == static_cast<uint16_t>(Errc::unsupported) ||
          c == static_cast<uint16_t>(Errc::protocol_error))
        code = static_cast<Errc>(c);
      reason.clear();
      for (size_t i = 2; i < body.size(); ++i) {
        char ch = static_cast<char>(body[i]);
        reason.push_back(ch >= 0x20 && ch < 0x7f ? ch : '?');
      }
    }
    return Error(code, fmt::format("the peer refused us: {}", reason));
  }

  // Tells the peer why we refuse it (best effort, short grace), then returns `why`.
  Error refuse(Error why) {
    std::string text = why.message().substr(0, kMaxReasonBytes);
    std::vector<uint8_t> body(2 + text.size());
    store_be16(body.data(), static_cast<uint16_t>(why.code().value()));
    std::copy(text.begin(), text.end(), body.begin() + 2);
    std::vector<uint8_t> msg(kHeaderBytes);
    msg[0] = static_cast<uint8_t>(Msg::reject);
    store_be32(msg.data() + 4, static_cast<uint32_t>(body.size()));
    msg.insert(msg.end(), body.begin(), body.end());
    auto grace = Deadline::after(kRejectGrace);
    (void)pipe_.send(msg, grace);
    return why;
  }

  Error decorate(Error e) const {
    std::string who = peer_node_.empty() ? peer_ : fmt::format("{} (node '{}')", peer_, peer_node_);
    return Error(e.code(),
                 fmt::format("bootstrap handshake with {} as {} failed: {}", who,
                             role_ == Role::initiator ? "initiator" : "responder", e.message()));
  }

  BytePipe& pipe_;
  Role role_;
  std::string_view key_;
  Deadline deadline_;
  std::string peer_;
  const PeerCheck* check_;
  std::string peer_node_;
  std::vector<uint8_t> transcript_;
};

}  // namespace

Result<Hello> exchange(BytePipe& pipe, const Hello& mine, Role role,
                       std::string_view pre_shared_key, Deadline deadline, SessionKeys* keys,
                       const PeerCheck* check) {
  if (sodium_init() < 0) {
    return Error(Errc::unsupported,
                 "libsodium failed to initialise (no entropy source?); check /dev/urandom");
  }
  if (mine.version != kProtocolVersion) {
    return Error(Errc::invalid_argument,
                 fmt::format("Hello.version is {}, this build speaks {}; leave it at the default",
                             mine.version, kProtocolVersion));
  }
  Session session(pipe, role, pre_shared_key, deadline, check);
  return session.run(mine, keys);
}

Result<Hello> exchange(int fd, const Hello& mine, Role role, std::string_view pre_shared_key,
                       Deadline deadline, SessionKeys* keys, const PeerCheck* check) {
  int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) != 0)
    return errno_error(errno, "fcntl(O_NONBLOCK) on the bootstrap socket");
  SocketPipe pipe(fd);
  return exchange(pipe, mine, role, pre_shared_key, deadline, keys, check);
}

}  // namespace rdmarepl::transport::bootstrap
