#include "net/unix_socket.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

namespace weft::net {
namespace {

Status abstractAddress(const std::string& name, sockaddr_un* address, socklen_t* length) {
  std::memset(address, 0, sizeof(*address));
  address->sun_family = AF_UNIX;
  if (name.size() + 1 > sizeof(address->sun_path)) {
    return invalidArgument("unix socket name '" + name + "' is too long");
  }
  // A leading NUL puts the name in the abstract namespace.
  std::memcpy(address->sun_path + 1, name.data(), name.size());
  *length = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
  return Status::ok();
}

Status waitFor(int fd, short events, Deadline deadline, const char* what) {
  for (;;) {
    pollfd entry{fd, events, 0};
    int ready = poll(&entry, 1, deadline.remainingMs(1000));
    if (ready > 0) return Status::ok();
    if (ready < 0 && errno != EINTR) return systemError(std::string("poll (") + what + ")", errno);
    if (deadline.expired()) return timeoutError(std::string("timed out ") + what);
  }
}

}  // namespace

Status listenUnix(const std::string& name, Socket* out) {
  sockaddr_un address;
  socklen_t length;
  WEFT_TRY(abstractAddress(name, &address, &length));
  Socket socket(::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!socket.isOpen()) return systemError("socket(AF_UNIX)", errno);
  if (bind(socket.fd(), reinterpret_cast<sockaddr*>(&address), length) != 0) {
    return systemError("bind(@" + name + ")", errno);
  }
  if (::listen(socket.fd(), SOMAXCONN) != 0) return systemError("listen(@" + name + ")", errno);
  *out = std::move(socket);
  return Status::ok();
}

Status connectUnix(const std::string& name, Deadline deadline, Socket* out) {
  sockaddr_un address;
  socklen_t length;
  WEFT_TRY(abstractAddress(name, &address, &length));
  auto backoff = std::chrono::milliseconds(1);
  for (;;) {
    Socket socket(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (!socket.isOpen()) return systemError("socket(AF_UNIX)", errno);
    if (::connect(socket.fd(), reinterpret_cast<sockaddr*>(&address), length) == 0) {
      WEFT_TRY(setNonBlocking(socket.fd()));
      *out = std::move(socket);
      return Status::ok();
    }
    int error = errno;
    if (error != ECONNREFUSED && error != ENOENT && error != EAGAIN) {
      return systemError("connect(@" + name + ")", error);
    }
    if (deadline.expired()) {
      return timeoutError("nobody listens on unix socket @" + name +
                          " (is the peer on another host or network namespace?)");
    }
    std::this_thread::sleep_for(backoff);
    backoff = std::min(backoff * 2, std::chrono::milliseconds(100));
  }
}

Status acceptUnix(const Socket& listener, Deadline deadline, Socket* out) {
  for (;;) {
    int fd = accept4(listener.fd(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd >= 0) {
      *out = Socket(fd);
      return Status::ok();
    }
    if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR &&
        !isTransientAcceptError(errno)) {
      return systemError("accept(unix)", errno);
    }
    WEFT_TRY(waitFor(listener.fd(), POLLIN, deadline, "waiting for a local peer to connect"));
  }
}

Status sendWithFds(int socket, const void* data, size_t bytes, const std::vector<int>& fds,
                   Deadline deadline) {
  std::vector<char> control(CMSG_SPACE(sizeof(int) * fds.size()));
  msghdr message{};
  iovec iov{const_cast<void*>(data), bytes};
  message.msg_iov = &iov;
  message.msg_iovlen = 1;
  if (!fds.empty()) {
    message.msg_control = control.data();
    message.msg_controllen = control.size();
    cmsghdr* header = CMSG_FIRSTHDR(&message);
    header->cmsg_level = SOL_SOCKET;
    header->cmsg_type = SCM_RIGHTS;
    header->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
    std::memcpy(CMSG_DATA(header), fds.data(), sizeof(int) * fds.size());
  }
  for (;;) {
    ssize_t sent = sendmsg(socket, &message, MSG_NOSIGNAL);
    if (sent == static_cast<ssize_t>(bytes)) return Status::ok();
    if (sent >= 0) {
      // The descriptors went with the first byte; the rest is plain data.
      return sendAll(socket, static_cast<const char*>(data) + sent, bytes - sent, deadline);
    }
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) return systemError("sendmsg(SCM_RIGHTS)", errno);
    WEFT_TRY(waitFor(socket, POLLOUT, deadline, "sending descriptors to a local peer"));
  }
}

Status recvWithFds(int socket, void* data, size_t bytes, size_t fdCount, std::vector<int>* fds,
                   Deadline deadline) {
  fds->clear();
  std::vector<char> control(CMSG_SPACE(sizeof(int) * std::max<size_t>(fdCount, 1)));
  size_t received = 0;
  auto closeAll = [&] {
    for (int fd : *fds) ::close(fd);
    fds->clear();
  };
  while (received < bytes) {
    msghdr message{};
    iovec iov{static_cast<char*>(data) + received, bytes - received};
    message.msg_iov = &iov;
    message.msg_iovlen = 1;
    message.msg_control = control.data();
    message.msg_controllen = control.size();
    ssize_t got = recvmsg(socket, &message, MSG_CMSG_CLOEXEC);
    if (got == 0) {
      closeAll();
      return remoteError("a local peer closed its unix socket during set-up");
    }
    if (got < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        Status ready = waitFor(socket, POLLIN, deadline, "receiving descriptors from a local peer");
        if (!ready.isOk()) {
          closeAll();
          return ready;
        }
        continue;
      }
      int error = errno;
      closeAll();
      return systemError("recvmsg(SCM_RIGHTS)", error);
    }
    for (cmsghdr* header = CMSG_FIRSTHDR(&message); header != nullptr;
         header = CMSG_NXTHDR(&message, header)) {
      if (header->cmsg_level != SOL_SOCKET || header->cmsg_type != SCM_RIGHTS) continue;
      size_t count = (header->cmsg_len - CMSG_LEN(0)) / sizeof(int);
      for (size_t i = 0; i < count; ++i) {
        int fd;
        std::memcpy(&fd, CMSG_DATA(header) + i * sizeof(int), sizeof(int));
        fds->push_back(fd);
      }
    }
    if (message.msg_flags & MSG_CTRUNC) {
      closeAll();
      return invalidUsage("a local peer sent more descriptors than expected");
    }
    received += static_cast<size_t>(got);
  }
  if (fds->size() != fdCount) {
    size_t count = fds->size();
    closeAll();
    return invalidUsage("expected " + std::to_string(fdCount) +
                        " descriptors from a local peer, got " + std::to_string(count));
  }
  return Status::ok();
}

}  // namespace weft::net
