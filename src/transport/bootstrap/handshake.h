// The bootstrap handshake, shared by the TCP and verbs transports: over a freshly connected
// TCP socket (or, in RDMA CM mode, the connected QP itself: a BytePipe) both sides exchange a
// Hello, authenticated with a pre-shared key when one is configured. Message sequence and byte
// layout: docs/wire_format.md ("Bootstrap handshake").
//
// Authentication (when the key is non-empty on both sides): each side sends a 32-byte random
// nonce; every later proof is HMAC-SHA-512/256 (libsodium crypto_auth) keyed with the
// pre-shared key over a role label and the whole transcript so far, which contains both
// nonces. The initiator proves knowledge of the key before the responder sends anything
// about itself, and the responder proves it before the initiator does, so neither an
// unauthenticated peer nor a replayed transcript learns the other side's regions (rkeys).
// The key itself never travels. A keyed handshake also yields two session keys, one per
// direction, for authenticating what the connection carries afterwards.
#pragma once

#include <string_view>

#include "rdmarepl/core/clock.h"
#include "rdmarepl/core/result.h"
#include "rdmarepl/transport/transport.h"
#include "transport/bootstrap/hello.h"
#include "transport/bootstrap/pipe.h"

namespace rdmarepl::transport::bootstrap {

// What one side sends in a whole handshake, for pipes that must reserve room (RDMA CM mode):
// at most kMaxMessagesSent messages (initiator: Open, Proof, Hello or Reject; responder:
// Open, Hello, Done or Reject), of at most kMaxBytesSent bytes together.
inline constexpr size_t kMaxMessagesSent = 3;
inline constexpr size_t kMaxBytesSent = kMaxHelloBytes + 2048;

// The side that connected is the initiator; the side that accepted is the responder.
enum class Role : uint8_t { initiator, responder };

// Runs the handshake on connected socket `fd`, which is switched to non-blocking mode (waits
// use poll(2) until `deadline`). Returns the peer's Hello. On failure the error names the peer (its
// address, and its node id once known) and the reason: Errc::auth_failed for a wrong or missing
// key, Errc::protocol_error for bytes that are not this protocol or a field over its limit,
// Errc::unsupported for another protocol version or transport kind, Errc::timeout,
// Errc::connection_closed. When the other side is still listening, it is told why it was
// refused (a Reject message) before we give up. The socket is left open; the caller owns it.
// `keys` (optional) receives the session keys (set only with a pre-shared key).
// `check` (responder only, optional): consulted with the initiator's Hello before Done; an
// error refuses the initiator with a Reject carrying its message.
Result<Hello> exchange(int fd, const Hello& mine, Role role, std::string_view pre_shared_key,
                       Deadline deadline, SessionKeys* keys = nullptr,
                       const PeerCheck* check = nullptr);

// The same handshake over any byte pipe (the bytes are identical; the socket form above wraps
// the descriptor in a SocketPipe). Each handshake message is one pipe.send() call; a refused
// peer's Reject is sent with a 500 ms grace deadline. Errors name pipe.peer().
Result<Hello> exchange(BytePipe& pipe, const Hello& mine, Role role,
                       std::string_view pre_shared_key, Deadline deadline,
                       SessionKeys* keys = nullptr, const PeerCheck* check = nullptr);

}  // namespace rdmarepl::transport::bootstrap
