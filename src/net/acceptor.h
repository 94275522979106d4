// Accepting authenticated connections on a listener, many at once, for transports and the
// bootstrap ring: every connection proves the secret (auth.h) and then sends a fixed-size hello
// of the caller's protocol (a TCP lane's {rank, index}); a judge supplied by the caller decides
// whether to keep it. Strays (port scans, garbage, wrong secrets or communicators, slow or silent
// senders) are logged at WARN with their source and the reason and dropped; they cost the good
// connections nothing beyond their own work, because
//   - the handshakes run concurrently on non-blocking sockets driven by one epoll loop, whose work
//     per wake-up follows the connections that made progress, not all those in flight, so that a
//     storm of N connections costs O(N) rather than O(N^2);
//   - each connection has its own cap (perConnectionMs) besides the overall deadline;
//   - room for maxInFlight connections beyond the ones still expected: a storm of honest peers
//     (every rank of a host at once, descheduled between their messages on a crowded machine) is
//     served all together and never counts as an attack, while strays get maxInFlight places;
//   - when every place is taken and more connections wait, the oldest one that has not yet sent
//     an acceptable hello (right purpose and communicator id, which strays do not know) is dropped
//     to make room once it has had a quarter of its cap; one whose hello passed is dropped only at
//     its own cap. Until a place frees, new connections wait in the listen backlog (a listener
//     that may see a storm should ask listenOn for SOMAXCONN);
//   - every message has a fixed size (at most 32 + 52 + 36 + kMaxHelloBytes bytes buffered per
//     connection) and nothing is allocated from peer input.
//
// Use (the TCP transport's set-up, abridged):
//
//   net::AcceptSpec spec;
//   spec.secret = context.secret;  spec.purpose = net::Purpose::kTcpData;
//   spec.commId = context.commId;  spec.helloBytes = sizeof(LaneHello);
//   spec.expected = lanesToAccept; spec.deadline = context.deadline;  spec.logName = "tcp";
//   Status status = net::acceptAuthenticated(
//       listener, spec,
//       [&](net::Arrival& arrival) {
//         LaneHello hello = decode(arrival.hello.data());
//         if (!wanted(hello)) return invalidUsage("unexpected lane hello (rank 7, socket 0)");
//         keep(hello, std::move(arrival.socket));
//         return Status::ok();
//       },
//       [&] { return "tcp: waiting for connections from " + missingPeers(); });
//
// Only the calling thread runs; the judge and describeMissing are called on it.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "base/deadline.h"
#include "base/status.h"
#include "net/address.h"
#include "net/auth.h"
#include "net/socket.h"

namespace weft::net {

constexpr size_t kMaxHelloBytes = 64;

// An authenticated connection and its hello, handed to the judge.
struct Arrival {
  Socket socket;  // non-blocking, TCP_NODELAY where TCP; move it out to keep the connection
  SocketAddress from;
  std::array<uint8_t, kMaxHelloBytes> hello{};
  size_t helloBytes = 0;  // = AcceptSpec::helloBytes
};

struct AcceptSpec {
  Secret secret{};
  Purpose purpose = Purpose::kTcpData;
  uint64_t commId = 0;
  size_t helloBytes = 0;        // the caller's hello after authentication, 0..kMaxHelloBytes
  int expected = 0;             // return once this many connections were kept
  Deadline deadline;            // for all of them
  int perConnectionMs = 5000;   // for one connection's handshake and hello
  int maxInFlight = 64;         // in flight beyond the connections still expected (strays' room)
  const char* logName = "net";  // WARN lines read "<logName>: dropped a connection from ..."
};

// Returns ok once `expected` arrivals were kept. judge(arrival): ok keeps the connection (the
// judge takes arrival.socket; one it leaves behind is closed) and counts it; an error drops it,
// logged with the judge's message. On the deadline: weftTimeout, with describeMissing()'s text
// (say who has not connected yet) followed by how many arrived and the last drop. Connections
// still in flight when this returns are dropped (and logged). A listener error is weftSystemError.
// Arguments out of range are weftInvalidArgument naming the field.
Status acceptAuthenticated(const Socket& listener, const AcceptSpec& spec,
                           const std::function<Status(Arrival&)>& judge,
                           const std::function<std::string()>& describeMissing);

namespace detail {
class Acceptor;
}

// The same acceptance driven by the caller's progress loop instead of a blocking call, for
// listeners that stay open while the connections arrive on first use (the TCP transport): the
// caller watches waitFd() in its own epoll set and calls step() when it is readable (a timer
// inside makes it readable when a connection's cap or an eviction is due) or whenever it likes;
// step() never blocks. There is no overall deadline (spec.deadline is ignored): the caller's
// own operations have theirs. After spec.expected connections were kept, no more are accepted.
// The judge runs inside step(), on the caller's thread.
class AcceptLoop {
 public:
  AcceptLoop(const Socket& listener, const AcceptSpec& spec, std::function<Status(Arrival&)> judge);
  ~AcceptLoop();
  AcceptLoop(const AcceptLoop&) = delete;
  AcceptLoop& operator=(const AcceptLoop&) = delete;

  // Arguments out of range are weftInvalidArgument naming the field, as for acceptAuthenticated.
  Status start();
  int waitFd() const;
  // A listener error is weftSystemError; a bad connection is only dropped (and logged).
  Status step();
  int kept() const;
  // Drops every connection still in flight, logging each with `why`.
  void dropAll(const std::string& why);

 private:
  const Socket& listener_;
  AcceptSpec spec_;
  std::function<Status(Arrival&)> judge_;
  std::unique_ptr<detail::Acceptor> acceptor_;
};

}  // namespace weft::net
