// TCP transport: non-blocking sockets driven by epoll, several sockets per peer for large
// messages, authenticated connections, IPv4 and IPv6.
#pragma once

#include <memory>

#include "transports/transport.h"

namespace weft::tcp {

struct TcpOptions {
  int socketsPerPeer = 1;  // WEFT_NSOCKS; a pair uses the smaller of its two ends' values
};

std::unique_ptr<Transport> createTcpTransport(const TcpOptions& options);

}  // namespace weft::tcp
