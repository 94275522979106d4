// A side link is a stream socket beside a transport's data path (shm, rdma), kept open after
// set-up for what the data path cannot carry: a peer that leaves on purpose says goodbye, a peer
// whose communicator failed sends a failure notice naming the culprit, and a peer that dies
// closes the link without either, which the kernel reports at once.
#pragma once

namespace weft {

struct SideNews {
  enum class Kind { kNothing, kGoodbye, kFailureNotice, kClosed };
  Kind kind = Kind::kNothing;
  int culprit = -1;  // kFailureNotice: the rank the notice named (-1: a timeout or an abort)
};

// Reads what arrived without blocking.
SideNews readSideNews(int fd);
// Best effort, never blocking.
void sendGoodbye(int fd);
void sendFailureNotice(int fd, int culprit);

}  // namespace weft
