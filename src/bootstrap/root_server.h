// The rendezvous root: collects one join message from each of nranks ranks, checks that they
// agree (same nranks, distinct ranks in range), chooses a random communicator id and sends every
// rank that id and the address of its ring successor: a fixed-size reply, so the root's work
// and traffic grow as nranks (the ranks gather their descriptions around the ring). Runs on its own
// thread in the process that created the unique id (or in rank 0 for environment initialisation).
// Connections are multiplexed with epoll and each has a deadline and a size cap, so a port scan,
// garbage or a slow sender is dropped without stalling the others; every failed authentication is
// logged at WARN and dropped. A rank whose connection drops after it joined (its process died)
// fails the round for every rank, naming it, unless a process joins as that rank again within a
// second (the slot is freed for a restart).
#pragma once

#include <memory>

#include "base/deadline.h"
#include "base/status.h"
#include "net/address.h"
#include "net/auth.h"

namespace weft::bootstrap {

class RootServer {
 public:
  // Listens on `address` (port 0: ephemeral) and serves one round on a background thread, which
  // exits when the round completes or the deadline passes (logging which ranks never joined).
  static Status start(const net::SocketAddress& address, const net::Secret& secret,
                      Deadline deadline, std::shared_ptr<RootServer>* out);
  virtual ~RootServer() = default;
  // The address actually bound (with the chosen port).
  virtual net::SocketAddress address() const = 0;
  // Stops serving (closing the listener and every connection) and joins the thread.
  virtual void stop() = 0;
  // Whether the thread has finished (round served, failed, timed out or stopped). A finished
  // server has already closed its sockets; stop() then only joins the thread, at once.
  virtual bool done() const = 0;
};

}  // namespace weft::bootstrap
