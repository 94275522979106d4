// Unix-domain stream sockets in the abstract namespace (no file is ever created, so nothing is
// left behind by a crash), and passing file descriptors over them. Used by the shm transport to
// hand shared-memory segments and wake-up eventfds to the other ranks of a host.
#pragma once

#include <string>
#include <vector>

#include "base/deadline.h"
#include "base/status.h"
#include "net/socket.h"

namespace weft::net {

// Listens on the abstract name `name` (without the leading NUL), non-blocking.
Status listenUnix(const std::string& name, Socket* out);
// Connects to an abstract name, retrying until the deadline while nobody listens yet.
Status connectUnix(const std::string& name, Deadline deadline, Socket* out);
Status acceptUnix(const Socket& listener, Deadline deadline, Socket* out);

// Sends `bytes` of data together with `fds` (SCM_RIGHTS) in one message.
Status sendWithFds(int socket, const void* data, size_t bytes, const std::vector<int>& fds,
                   Deadline deadline);
// Receives exactly `bytes` of data and exactly `fdCount` descriptors (owned by the caller on
// success; closed on failure).
Status recvWithFds(int socket, void* data, size_t bytes, size_t fdCount, std::vector<int>* fds,
                   Deadline deadline);

}  // namespace weft::net
