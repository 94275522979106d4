// TCP transport: non-blocking sockets driven by epoll, several sockets per peer for large
// messages, authenticated connections made on a pair's first use, IPv4 and IPv6.
#pragma once

#include <memory>

#include "transports/transport.h"

namespace weft::tcp {

struct TcpOptions {
  int socketsPerPeer = 1;  // WEFT_NSOCKS; a pair uses the smaller of its two ends' values
  // WEFT_RUNTIME_CONNECT=0: connect() makes every connection before it returns, instead of
  // making a pair's connections the first time something is posted between them.
  bool connectAtInit = false;
};

std::unique_ptr<Transport> createTcpTransport(const TcpOptions& options);

}  // namespace weft::tcp
