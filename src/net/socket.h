// Thin, deadline-bounded socket helpers shared by the bootstrap and the TCP transport. Sockets are
// non-blocking; the helpers poll with the deadline, so no call here can block forever.
#pragma once

#include <cstddef>
#include <cstdint>

#include "base/deadline.h"
#include "base/status.h"
#include "net/address.h"

namespace weft::net {

// An owned file descriptor (closed on destruction). Move-only.
class Socket {
 public:
  Socket() = default;
  explicit Socket(int fd) : fd_(fd) {}
  Socket(Socket&& other) noexcept : fd_(other.release()) {}
  Socket& operator=(Socket&& other) noexcept;
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;
  ~Socket() { close(); }

  int fd() const { return fd_; }
  bool isOpen() const { return fd_ >= 0; }
  int release() {
    int fd = fd_;
    fd_ = -1;
    return fd;
  }
  void close();

 private:
  int fd_ = -1;
};

// Binds and listens (SO_REUSEADDR, non-blocking, close-on-exec). Port 0 picks an ephemeral port;
// *bound receives the actual address. A fixed port that is in use is tried again until busyUntil
// (by default, not at all).
Status listenOn(const SocketAddress& address, int backlog, Socket* out, SocketAddress* bound,
                Deadline busyUntil = Deadline::after(0));
// Connects, retrying refused/unreachable attempts with backoff until the deadline (the peer may
// not be listening yet). The socket is non-blocking with TCP_NODELAY on return.
Status connectTo(const SocketAddress& address, Deadline deadline, Socket* out);
// A connection made without waiting, for progress loops: startConnect begins it (one attempt, no
// retry), finishConnect then reports it once the socket is writable: *connected stays false while
// it is still being made; a refusal or reset is weftRemoteError naming the address.
Status startConnect(const SocketAddress& address, Socket* out);
Status finishConnect(int fd, bool* connected);
// Accepts one connection (non-blocking, TCP_NODELAY) or fails at the deadline.
Status acceptOne(const Socket& listener, Deadline deadline, Socket* out, SocketAddress* peer);

// Writes/reads exactly `bytes`, polling until the deadline. A peer that closes the connection
// yields weftRemoteError ("connection closed by peer"); the deadline yields weftTimeout.
Status sendAll(int fd, const void* data, size_t bytes, Deadline deadline);
Status recvAll(int fd, void* data, size_t bytes, Deadline deadline);

// Non-blocking steps toward a fixed-size message, for servers that multiplex many connections:
// receive into buffer[*done, bytes) or send data[*done, bytes) as far as the socket allows,
// advancing *done, and set *complete once all `bytes` are through. Never reads past `bytes`, so
// what the peer sends next stays in the socket. A peer that closes or resets the connection
// yields weftRemoteError: "connection closed by peer during <what> (3 of 32 bytes)".
Status recvToward(int fd, void* buffer, size_t bytes, size_t* done, const char* what,
                  bool* complete);
Status sendToward(int fd, const void* data, size_t bytes, size_t* done, const char* what,
                  bool* complete);

// Waits until fd is ready for `events` (POLLIN, POLLOUT) or the deadline passes (false).
bool waitFor(int fd, short events, const Deadline& deadline);

// accept() errors that concern only the connection being accepted (a pending network error or
// a connection aborted in the queue, per accept(2)); the caller should just accept again.
bool isTransientAcceptError(int err);

Status setNonBlocking(int fd);
Status setNoDelay(int fd);
// Socket buffer sizes; 0 leaves the kernel's autotuning alone.
Status setBufferSizes(int fd, int sendBytes, int recvBytes);

}  // namespace weft::net
