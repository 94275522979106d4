#include "bootstrap/ring_exchange.h"

#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <string>

namespace weft::bootstrap {

std::string rankName(int rank) {
  return "rank " + std::to_string(rank);
}

Status exchange(Transfer out, Transfer in, Deadline deadline) {
  while (true) {
    if (out.left == 0 && in.left == 0) return Status::ok();
    bool progress = false;
    if (out.left > 0) {
      ssize_t n = send(out.fd, out.data, out.left, MSG_NOSIGNAL);
      if (n > 0) {
        out.data += n;
        out.left -= static_cast<size_t>(n);
        progress = true;
      } else if (errno == EPIPE || errno == ECONNRESET) {
        return remoteError(rankName(out.peer) + " closed the connection");
      } else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
        return systemError("sending to " + rankName(out.peer), errno);
      }
    }
    if (in.left > 0) {
      ssize_t n = recv(in.fd, in.data, in.left, 0);
      if (n > 0) {
        in.data += n;
        in.left -= static_cast<size_t>(n);
        progress = true;
      } else if (n == 0 || errno == ECONNRESET) {
        return remoteError(rankName(in.peer) + " closed the connection");
      } else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
        return systemError("receiving from " + rankName(in.peer), errno);
      }
    }
    if (progress || (out.left == 0 && in.left == 0)) continue;
    pollfd fds[2];
    nfds_t count = 0;
    if (out.left > 0) fds[count++] = pollfd{out.fd, POLLOUT, 0};
    if (in.left > 0) fds[count++] = pollfd{in.fd, POLLIN, 0};
    int rc = poll(fds, count, deadline.remainingMs());
    if (rc == 0) {
      std::string what;
      if (out.left > 0) what = std::to_string(out.left) + " bytes to " + rankName(out.peer);
      if (in.left > 0) {
        what += (what.empty() ? "" : " and ") + std::to_string(in.left) + " bytes from " +
                rankName(in.peer);
      }
      return timeoutError(what + " still pending at the deadline");
    }
    if (rc < 0 && errno != EINTR) return systemError("poll", errno);
  }
}

}  // namespace weft::bootstrap
