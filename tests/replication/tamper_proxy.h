// A man in the middle for the TCP transport: a thread that accepts the leader's connections
// on 127.0.0.1 and relays each to the follower. It passes the bootstrap handshake through
// untouched (it has no key), then reads the leader's data frames (docs/wire_format.md, "TCP
// transport frames") and, on the first connection only, attacks one batch as an on-path
// attacker could: it changes a value byte, drops the batch's last record, or sends an
// earlier batch again; each time it makes the batch and the frames well formed again (batch
// CRC32C, lengths, frame sequence numbers), so that only a MAC can tell; or it changes the
// seq an acknowledgement of the follower names; or it sends the follower garbage after a
// batch (random bytes, a write frame larger than any region, or half a frame and then the
// end of the stream). Later connections are relayed unchanged, so the leader can catch the
// follower up. The one exception is change_chunk: it changes a byte of the first
// checkpoint chunk that passes, on whichever connection (fixing up the chunk's CRCs).
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

#include "rdmarepl/core/byte_order.h"
#include "rdmarepl/core/crc32c.h"

namespace rdmarepl::test {

class TamperProxy {
 public:
  // change_ack: the follower's `victim`-th acknowledgement names one record more.
  // garbage_bytes, oversized_frame, truncated_frame: sent to the follower right after the
  // victim batch (docs/wire_format.md, "TCP transport frames").
  enum class Attack : uint8_t {
    change_value,
    drop_last_record,
    replay,
    change_ack,
    change_chunk,
    garbage_bytes,
    oversized_frame,
    truncated_frame,
  };
  // The attack hits the `victim`-th batch frame (0-based) of the first connection; a replay
  // sends the first batch again right after it.
  TamperProxy(uint16_t follower_port, Attack attack, int victim)
      : follower_port_(follower_port), attack_(attack), victim_(victim) {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(listen_fd_, reinterpret_cast<sockaddr*>(&a), sizeof a);
    ::listen(listen_fd_, 8);
    socklen_t len = sizeof a;
    ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] { run(); });
  }
  ~TamperProxy() {
    stop_ = true;
    thread_.join();
    ::close(listen_fd_);
  }
  TamperProxy(const TamperProxy&) = delete;
  TamperProxy& operator=(const TamperProxy&) = delete;

  [[nodiscard]] uint16_t port() const { return port_; }
  // Whether the attack was carried out (the victim batch passed through the proxy).
  [[nodiscard]] bool attacked() const { return attacked_.load(); }

 private:
  struct Pair {
    int leader = -1;
    int follower = -1;
    bool attack = false;
    std::vector<uint8_t> from_leader;    // bytes read, not yet relayed
    std::vector<uint8_t> from_follower;  // relayed as they come, but ack seqs are fixed up
    int handshake_msgs = 0;              // handshake messages of the leader relayed (3)
    int follower_msgs = 0;               // and of the follower (3)
    int batches = 0;
    int acks = 0;
    uint64_t seq_shift = 0;  // frames injected so far (the follower's seqs run ahead by this)
    std::vector<uint8_t> first_batch;  // the first batch frame, for a replay
  };

  void run() {
    std::vector<Pair> pairs;
    bool first = true;
    while (!stop_) {
      std::vector<pollfd> fds{{listen_fd_, POLLIN, 0}};
      for (auto& p : pairs) {
        fds.push_back({p.leader, POLLIN, 0});
        fds.push_back({p.follower, POLLIN, 0});
      }
      if (::poll(fds.data(), fds.size(), 20) <= 0) continue;
      if (fds[0].revents & POLLIN) {
        Pair p;
        p.leader = ::accept(listen_fd_, nullptr, nullptr);
        p.follower = connect_follower();
        p.attack = first;
        first = false;
        pairs.push_back(std::move(p));
        continue;
      }
      for (size_t i = 0; i < pairs.size(); ++i) {
        Pair& p = pairs[i];
        bool ok = true;
        if (fds[1 + 2 * i].revents & (POLLIN | POLLHUP | POLLERR))
          ok = pump(p.leader, p.from_leader);
        if (ok && (fds[2 + 2 * i].revents & (POLLIN | POLLHUP | POLLERR)))
          ok = pump(p.follower, p.from_follower);
        if (ok) ok = relay_leader(p) && relay_follower(p);
        if (!ok) {
          ::close(p.leader);
          ::close(p.follower);
          p.leader = p.follower = -1;
        }
      }
      std::erase_if(pairs, [](const Pair& p) { return p.leader < 0; });
    }
    for (auto& p : pairs) {
      ::close(p.leader);
      ::close(p.follower);
    }
  }

  int connect_follower() const {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(follower_port_);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
    return fd;
  }

  static bool pump(int fd, std::vector<uint8_t>& into) {
    uint8_t buf[65536];
    const ssize_t n = ::recv(fd, buf, sizeof buf, MSG_DONTWAIT);
    if (n == 0) return false;
    if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK;
    into.insert(into.end(), buf, buf + n);
    return true;
  }

  static bool send_all(int fd, const uint8_t* p, size_t n) {
    while (n > 0) {
      const ssize_t w = ::send(fd, p, n, MSG_NOSIGNAL);
      if (w <= 0) return false;
      p += w;
      n -= static_cast<size_t>(w);
    }
    return true;
  }

  // One complete unit at the front of `buf` (a handshake message, then a data frame): its
  // size, or 0 while incomplete.
  static size_t unit(const std::vector<uint8_t>& buf, bool handshake) {
    const size_t header = handshake ? 8 : 32;
    if (buf.size() < header) return 0;
    uint64_t len = load_be32(buf.data() + 4);
    if (!handshake && buf[2] != 1 && buf[2] != 4 && buf[2] != 6) len = 0;  // no payload
    return buf.size() >= header + len ? header + len : 0;
  }

  bool relay_follower(Pair& p) {
    for (size_t n; (n = unit(p.from_follower, p.follower_msgs < 3)) != 0;) {
      std::vector<uint8_t> u(p.from_follower.begin(), p.from_follower.begin() + n);
      p.from_follower.erase(p.from_follower.begin(), p.from_follower.begin() + n);
      if (p.follower_msgs < 3) {
        ++p.follower_msgs;
      } else if (u[2] == 1 && attack_ == Attack::change_ack && p.attack && !attacked_ &&
                 p.acks++ >= victim_) {
        store_be32(u.data() + 20, load_be32(u.data() + 20) + 1);  // the immediate's seq
        attacked_ = true;
      } else if (u[2] == 2 || u[2] == 3) {
        // Acks and naks name the follower's count of our frames: the leader's is lower by
        // the frames injected.
        const uint64_t seq = load_be64(u.data() + 24);
        store_be64(u.data() + 24, seq > p.seq_shift ? seq - p.seq_shift : seq);
      }
      if (!send_all(p.leader, u.data(), u.size())) return false;
    }
    return true;
  }

  bool relay_leader(Pair& p) {
    for (size_t n; (n = unit(p.from_leader, p.handshake_msgs < 3)) != 0;) {
      std::vector<uint8_t> u(p.from_leader.begin(), p.from_leader.begin() + n);
      p.from_leader.erase(p.from_leader.begin(), p.from_leader.begin() + n);
      if (p.handshake_msgs < 3) {
        ++p.handshake_msgs;
        if (!send_all(p.follower, u.data(), u.size())) return false;
        continue;
      }
      // Requests carry the leader's own frame count, which the follower sees shifted.
      if (u[2] == 1 || u[2] == 4 || u[2] == 5)
        store_be64(u.data() + 24, load_be64(u.data() + 24) + p.seq_shift);
      const bool batch =
          u[2] == 1 && u.size() >= 32 + 32 && load_be32(u.data() + 32) == kBatchMagic;
      if (batch && p.batches == 0) p.first_batch = u;
      if (attack_ == Attack::change_chunk && !attacked_ && is_first_chunk(u)) {
        change_chunk(u);
        attacked_ = true;
      }
      if (batch && p.attack && batch_attack() && !attacked_ && p.batches++ >= victim_ && suits(u)) {
        attacked_ = true;
        if (!attack(p, u)) return false;  // a truncated frame ends the stream
        continue;
      }
      if (!send_all(p.follower, u.data(), u.size())) return false;
    }
    return true;
  }

  bool attack(Pair& p, std::vector<uint8_t>& frame) {
    uint8_t* b = frame.data() + 32;
    switch (attack_) {
      case Attack::change_value: {
        // The first record's value starts after the 32-byte batch header, the 28-byte
        // record header and the key.
        const uint32_t key_len = load_be32(b + 32 + 4);
        b[32 + 28 + key_len] = 'F';
        fix_crc(b);
        return send_all(p.follower, frame.data(), frame.size());
      }
      case Attack::drop_last_record: {
        const uint32_t count = load_be32(b + 8);
        const uint32_t payload = load_be32(b + 12);
        const size_t tail = frame.size() - 32 - pad8(32 + payload);  // the MAC, if any
        size_t at = 32;
        for (uint32_t i = 0; i + 1 < count; ++i)
          at += 28 + load_be32(b + at + 4) + load_be32(b + at + 8);
        const uint32_t cut = static_cast<uint32_t>(at - 32);
        std::vector<uint8_t> out(frame.begin(), frame.begin() + 32 + static_cast<long>(at));
        out.resize(32 + pad8(at), 0);
        out.insert(out.end(), frame.end() - static_cast<long>(tail), frame.end());
        store_be32(out.data() + 32 + 8, count - 1);
        store_be32(out.data() + 32 + 12, cut);
        fix_crc(out.data() + 32);
        store_be32(out.data() + 4, static_cast<uint32_t>(out.size() - 32));
        return send_all(p.follower, out.data(), out.size());
      }
      case Attack::replay: {
        if (!send_all(p.follower, frame.data(), frame.size())) return false;
        std::vector<uint8_t> again = p.first_batch;
        ++p.seq_shift;
        store_be64(again.data() + 24, load_be64(frame.data() + 24) + 1);
        return send_all(p.follower, again.data(), again.size());
      }
      case Attack::garbage_bytes:
      case Attack::oversized_frame:
      case Attack::truncated_frame:
        return send_all(p.follower, frame.data(), frame.size()) && send_garbage(p, frame);
      case Attack::change_ack:
      case Attack::change_chunk:
        break;
    }
    return false;
  }

  // After `frame` (a write the follower accepted), bytes that are no valid next frame. A
  // truncated frame ends the stream (false closes the pair).
  bool send_garbage(Pair& p, const std::vector<uint8_t>& frame) const {
    std::vector<uint8_t> g(32);
    switch (attack_) {
      case Attack::garbage_bytes: {
        uint32_t x = 0x9E3779B9u;  // xorshift32: the same bytes every run
        g.resize(512);
        for (auto& b : g) {
          x ^= x << 13;
          x ^= x >> 17;
          x ^= x << 5;
          b = static_cast<uint8_t>(x);
        }
        g[0] = 0xA5;  // never the frame magic "TF"
        break;
      }
      case Attack::oversized_frame:
        // The next write of the stream, to the region the victim batch went to, claiming
        // 1 GiB: no region is that large (checked before a payload byte is read).
        std::memcpy(g.data(), frame.data(), 32);
        store_be32(g.data() + 4, 1u << 30);
        store_be64(g.data() + 24, load_be64(frame.data() + 24) + 1);
        break;
      case Attack::truncated_frame:
        // A well-formed header of the next write, then half of the victim's payload.
        std::memcpy(g.data(), frame.data(), 32);
        store_be64(g.data() + 24, load_be64(frame.data() + 24) + 1);
        g.insert(g.end(), frame.begin() + 32, frame.begin() + 32 + (frame.size() - 32) / 2);
        (void)send_all(p.follower, g.data(), g.size());
        return false;
      default:
        return false;
    }
    return send_all(p.follower, g.data(), g.size());
  }

  // The first chunk of a checkpoint (docs/wire_format.md, "Checkpoint shipping"): a write
  // whose payload starts with a chunk header of offset 0, with at least 64 payload bytes.
  static bool is_first_chunk(const std::vector<uint8_t>& u) {
    return u[2] == 1 && u.size() >= 32 + 48 + 64 && load_be32(u.data() + 32) == kChunkMagic &&
           load_be64(u.data() + 32 + 24) == 0 && load_be32(u.data() + 32 + 32) >= 64;
  }
  // Changes one snapshot byte of a first chunk and recomputes its payload and header CRCs,
  // so that only its tag can tell.
  static void change_chunk(std::vector<uint8_t>& u) {
    uint8_t* h = u.data() + 32;
    const uint32_t length = load_be32(h + 32);
    h[48 + length - 1] ^= 0x5A;
    store_be32(h + 36, crc32c::mask(crc32c::extend(0, h + 48, length)));
    store_be32(h + 40, crc32c::mask(crc32c::extend(0, h, 40)));
  }

  [[nodiscard]] bool batch_attack() const {
    return attack_ != Attack::change_ack && attack_ != Attack::change_chunk;
  }
  // Dropping a record needs a batch of two or more.
  bool suits(const std::vector<uint8_t>& frame) const {
    return attack_ != Attack::drop_last_record || load_be32(frame.data() + 32 + 8) >= 2;
  }
  static size_t pad8(size_t n) { return (n + 7) & ~size_t{7}; }
  static void fix_crc(uint8_t* batch) {
    const uint32_t payload = load_be32(batch + 12);
    uint32_t crc = crc32c::extend(0, batch, 24);
    crc = crc32c::extend(crc, batch + 32, payload);
    store_be32(batch + 24, crc32c::mask(crc));
  }

  static constexpr uint32_t kBatchMagic = 0x52504C42;  // "RPLB"
  static constexpr uint32_t kChunkMagic = 0x52435343;  // "RCSC"
  uint16_t follower_port_;
  Attack attack_;
  int victim_;
  int listen_fd_ = -1;
  uint16_t port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<bool> attacked_{false};
  std::thread thread_;
};

}  // namespace rdmarepl::test
