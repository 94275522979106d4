#include "net/socket.h"

#include <fcntl.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>
#include <thread>

namespace weft::net {
namespace {

std::string peerName(int fd) {
  sockaddr_storage storage{};
  socklen_t length = sizeof(storage);
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&storage), &length) != 0) {
    return "(address unknown)";
  }
  SocketAddress peer = SocketAddress::fromSockaddr(reinterpret_cast<sockaddr*>(&storage), length);
  return peer.isValid() ? peer.toString() : "(address unknown)";
}

SocketAddress localAddress(int fd) {
  sockaddr_storage storage{};
  socklen_t length = sizeof(storage);
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&storage), &length) != 0) return {};
  return SocketAddress::fromSockaddr(reinterpret_cast<sockaddr*>(&storage), length);
}

bool isRetryableConnectError(int err) {
  return err == ECONNREFUSED || err == ECONNRESET || err == ETIMEDOUT || err == ENETUNREACH ||
         err == EHOSTUNREACH;
}

// One connection attempt. *retryErr is set (and ok returned) when the attempt failed in a way
// worth retrying; a hard failure or the deadline returns an error.
Status connectOnce(const SocketAddress& address, const Deadline& deadline, Socket* out,
                   int* retryErr) {
  *retryErr = 0;
  Socket sock(socket(address.family(), SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!sock.isOpen()) return systemError("socket for connecting to " + address.toString(), errno);
  int err = 0;
  if (connect(sock.fd(), address.get(), address.length()) != 0) {
    err = errno;
    if (err == EINPROGRESS || err == EINTR) {
      if (!waitFor(sock.fd(), POLLOUT, deadline)) {
        return timeoutError("connecting to " + address.toString() +
                            ": no answer before the deadline");
      }
      socklen_t length = sizeof(err);
      if (getsockopt(sock.fd(), SOL_SOCKET, SO_ERROR, &err, &length) != 0) err = errno;
    }
  }
  if (err != 0) {
    if (isRetryableConnectError(err)) {
      *retryErr = err;
      return Status::ok();
    }
    return systemError("connecting to " + address.toString(), err);
  }
  // Connecting to a free ephemeral port on this host can make TCP connect the socket to itself
  // (simultaneous open); that is no peer at all, so treat it like a refusal.
  sockaddr_storage peer{};
  socklen_t peerLength = sizeof(peer);
  if (getpeername(sock.fd(), reinterpret_cast<sockaddr*>(&peer), &peerLength) == 0 &&
      SocketAddress::fromSockaddr(reinterpret_cast<sockaddr*>(&peer), peerLength) ==
          localAddress(sock.fd())) {
    *retryErr = ECONNREFUSED;
    return Status::ok();
  }
  *out = std::move(sock);
  return Status::ok();
}

}  // namespace

Socket& Socket::operator=(Socket&& other) noexcept {
  if (this != &other) {
    close();
    fd_ = other.release();
  }
  return *this;
}

void Socket::close() {
  // No retry on EINTR: Linux releases the descriptor even then, and a retry could close a
  // descriptor that another thread has just been given.
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

Status listenOn(const SocketAddress& address, int backlog, Socket* out, SocketAddress* bound,
                Deadline busyUntil) {
  if (!address.isValid()) return invalidArgument("listenOn: the address is not set");
  Socket sock(socket(address.family(), SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!sock.isOpen()) return systemError("socket for listening on " + address.toString(), errno);
  int one = 1;
  if (setsockopt(sock.fd(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0) {
    return systemError("SO_REUSEADDR on " + address.toString(), errno);
  }
  // An IPv6 listener must not also take IPv4 connections: families stay separate, so that the
  // address we publish is the only way in.
  if (address.family() == AF_INET6 &&
      setsockopt(sock.fd(), IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one)) != 0) {
    return systemError("IPV6_V6ONLY on " + address.toString(), errno);
  }
  while (bind(sock.fd(), address.get(), address.length()) != 0) {
    const int err = errno;
    // A client on this host that dials a fixed port before anyone listens there can be given
    // that very port as its own ephemeral one (a self-connection, which it drops at once): the
    // port is busy only for that moment, so a fixed port is tried again until busyUntil.
    if (err != EADDRINUSE || address.port() == 0 || busyUntil.expired()) {
      return systemError("bind to " + address.toString(), err);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (listen(sock.fd(), backlog) != 0) return systemError("listen on " + address.toString(), errno);
  if (bound != nullptr) {
    *bound = localAddress(sock.fd());
    if (!bound->isValid()) return systemError("getsockname on " + address.toString(), errno);
  }
  *out = std::move(sock);
  return Status::ok();
}

Status connectTo(const SocketAddress& address, Deadline deadline, Socket* out) {
  if (!address.isValid()) return invalidArgument("connectTo: the address is not set");
  constexpr int kFirstBackoffMs = 1;
  constexpr int kMaxBackoffMs = 100;
  int backoffMs = kFirstBackoffMs;
  while (true) {
    int retryErr = 0;
    Socket sock;
    WEFT_TRY(connectOnce(address, deadline, &sock, &retryErr));
    if (retryErr == 0) {
      WEFT_TRY(setNoDelay(sock.fd()));
      *out = std::move(sock);
      return Status::ok();
    }
    int sleepMs = std::min(backoffMs, deadline.remainingMs());
    if (sleepMs <= 0) {
      return timeoutError("connecting to " + address.toString() + ": still failing (" +
                          std::strerror(retryErr) + ") at the deadline");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(sleepMs));
    backoffMs = std::min(backoffMs * 2, kMaxBackoffMs);
  }
}

Status startConnect(const SocketAddress& address, Socket* out) {
  if (!address.isValid()) return invalidArgument("startConnect: the address is not set");
  Socket sock(socket(address.family(), SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!sock.isOpen()) return systemError("socket for connecting to " + address.toString(), errno);
  if (connect(sock.fd(), address.get(), address.length()) != 0 && errno != EINPROGRESS &&
      errno != EINTR) {
    const int err = errno;
    if (isRetryableConnectError(err)) {
      return remoteError("connecting to " + address.toString() + ": " + std::strerror(err));
    }
    return systemError("connecting to " + address.toString(), err);
  }
  *out = std::move(sock);
  return Status::ok();
}

Status finishConnect(int fd, bool* connected) {
  *connected = false;
  pollfd ready{fd, POLLOUT, 0};
  if (poll(&ready, 1, 0) != 1) return Status::ok();
  int err = 0;
  socklen_t length = sizeof(err);
  if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &length) != 0) err = errno;
  const SocketAddress self = localAddress(fd);
  sockaddr_storage storage{};
  socklen_t peerLength = sizeof(storage);
  if (err == 0 && getpeername(fd, reinterpret_cast<sockaddr*>(&storage), &peerLength) != 0) {
    err = errno == ENOTCONN ? ECONNREFUSED : errno;
  }
  const SocketAddress peer =
      SocketAddress::fromSockaddr(reinterpret_cast<sockaddr*>(&storage), peerLength);
  // A free port on this host can be connected to itself (see connectOnce): no peer listens there.
  if (err == 0 && peer == self) err = ECONNREFUSED;
  if (err != 0) {
    // The caller names the address: a refused connection has no peer address to read back.
    if (isRetryableConnectError(err)) {
      return remoteError(std::string("the connection failed: ") + std::strerror(err));
    }
    return systemError("connect", err);
  }
  *connected = true;
  return setNoDelay(fd);
}

Status acceptOne(const Socket& listener, Deadline deadline, Socket* out, SocketAddress* peer) {
  while (true) {
    sockaddr_storage storage{};
    socklen_t length = sizeof(storage);
    int fd = accept4(listener.fd(), reinterpret_cast<sockaddr*>(&storage), &length,
                     SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd >= 0) {
      Socket sock(fd);
      WEFT_TRY(setNoDelay(sock.fd()));
      if (peer != nullptr) {
        *peer = SocketAddress::fromSockaddr(reinterpret_cast<sockaddr*>(&storage), length);
      }
      *out = std::move(sock);
      return Status::ok();
    }
    int err = errno;
    if (err == EAGAIN || err == EWOULDBLOCK) {
      if (!waitFor(listener.fd(), POLLIN, deadline)) {
        return timeoutError("no connection on " + localAddress(listener.fd()).toString() +
                            " before the deadline");
      }
      continue;
    }
    if (err == EINTR || isTransientAcceptError(err)) continue;
    return systemError("accept on " + localAddress(listener.fd()).toString(), err);
  }
}

Status sendAll(int fd, const void* data, size_t bytes, Deadline deadline) {
  const auto* cursor = static_cast<const uint8_t*>(data);
  size_t left = bytes;
  while (left > 0) {
    ssize_t n = send(fd, cursor, left, MSG_NOSIGNAL);
    if (n > 0) {
      cursor += n;
      left -= static_cast<size_t>(n);
      continue;
    }
    int err = n == 0 ? EAGAIN : errno;
    if (err == EAGAIN || err == EWOULDBLOCK) {
      if (!waitFor(fd, POLLOUT, deadline)) {
        return timeoutError("sending to " + peerName(fd) + ": " + std::to_string(left) + " of " +
                            std::to_string(bytes) + " bytes still unsent at the deadline");
      }
      continue;
    }
    if (err == EINTR) continue;
    if (err == EPIPE || err == ECONNRESET) {
      return remoteError("connection closed by peer " + peerName(fd));
    }
    return systemError("sending to " + peerName(fd), err);
  }
  return Status::ok();
}

Status recvAll(int fd, void* data, size_t bytes, Deadline deadline) {
  auto* cursor = static_cast<uint8_t*>(data);
  size_t left = bytes;
  while (left > 0) {
    ssize_t n = recv(fd, cursor, left, 0);
    if (n > 0) {
      cursor += n;
      left -= static_cast<size_t>(n);
      continue;
    }
    if (n == 0) return remoteError("connection closed by peer " + peerName(fd));
    int err = errno;
    if (err == EAGAIN || err == EWOULDBLOCK) {
      if (!waitFor(fd, POLLIN, deadline)) {
        return timeoutError("receiving from " + peerName(fd) + ": " + std::to_string(left) +
                            " of " + std::to_string(bytes) +
                            " bytes still missing at the deadline");
      }
      continue;
    }
    if (err == EINTR) continue;
    if (err == ECONNRESET) return remoteError("connection closed by peer " + peerName(fd));
    return systemError("receiving from " + peerName(fd), err);
  }
  return Status::ok();
}

namespace {

Status closedDuring(const char* what, size_t done, size_t bytes) {
  return remoteError(std::string("connection closed by peer during ") + what + " (" +
                     std::to_string(done) + " of " + std::to_string(bytes) + " bytes)");
}

}  // namespace

// Errors other than EINTR are left for the following system call to report.
bool waitFor(int fd, short events, const Deadline& deadline) {
  while (true) {
    pollfd p{fd, events, 0};
    int rc = poll(&p, 1, deadline.remainingMs());
    if (rc > 0) return true;
    if (rc == 0) return false;
    if (errno != EINTR) return true;
  }
}

Status recvToward(int fd, void* buffer, size_t bytes, size_t* done, const char* what,
                  bool* complete) {
  auto* cursor = static_cast<uint8_t*>(buffer);
  while (*done < bytes) {
    ssize_t n = recv(fd, cursor + *done, bytes - *done, 0);
    if (n > 0) {
      *done += static_cast<size_t>(n);
      continue;
    }
    if (n == 0 || errno == ECONNRESET) return closedDuring(what, *done, bytes);
    if (errno == EAGAIN || errno == EWOULDBLOCK) break;
    if (errno != EINTR) return systemError(std::string("receiving ") + what, errno);
  }
  *complete = *done == bytes;
  return Status::ok();
}

Status sendToward(int fd, const void* data, size_t bytes, size_t* done, const char* what,
                  bool* complete) {
  const auto* cursor = static_cast<const uint8_t*>(data);
  while (*done < bytes) {
    ssize_t n = send(fd, cursor + *done, bytes - *done, MSG_NOSIGNAL);
    if (n > 0) {
      *done += static_cast<size_t>(n);
      continue;
    }
    int err = n == 0 ? EAGAIN : errno;
    if (err == EPIPE || err == ECONNRESET) return closedDuring(what, *done, bytes);
    if (err == EAGAIN || err == EWOULDBLOCK) break;
    if (err != EINTR) return systemError(std::string("sending ") + what, err);
  }
  *complete = *done == bytes;
  return Status::ok();
}

bool isTransientAcceptError(int err) {
  switch (err) {
    case ECONNABORTED:
    case EPROTO:
    case ENETDOWN:
    case ENOPROTOOPT:
    case EHOSTDOWN:
    case ENONET:
    case EHOSTUNREACH:
    case EOPNOTSUPP:
    case ENETUNREACH:
      return true;
    default:
      return false;
  }
}

Status setNonBlocking(int fd) {
  int flags = fcntl(fd, F_GETFL, 0);
  if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) != 0) {
    return systemError("fcntl(O_NONBLOCK)", errno);
  }
  return Status::ok();
}

Status setNoDelay(int fd) {
  int one = 1;
  if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) != 0) {
    return systemError("setsockopt(TCP_NODELAY)", errno);
  }
  return Status::ok();
}

Status setBufferSizes(int fd, int sendBytes, int recvBytes) {
  if (sendBytes > 0 && setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sendBytes, sizeof(sendBytes)) != 0) {
    return systemError("setsockopt(SO_SNDBUF, " + std::to_string(sendBytes) + ")", errno);
  }
  if (recvBytes > 0 && setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &recvBytes, sizeof(recvBytes)) != 0) {
    return systemError("setsockopt(SO_RCVBUF, " + std::to_string(recvBytes) + ")", errno);
  }
  return Status::ok();
}

}  // namespace weft::net
