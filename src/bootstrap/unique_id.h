// What a weftUniqueId holds: the rendezvous root's address and the job's secret.
#pragma once

#include <cstddef>
#include <cstdint>

#include "base/status.h"
#include "net/address.h"
#include "net/auth.h"
#include "weft/weft.h"

namespace weft::bootstrap {

struct UniqueIdContents {
  net::SocketAddress root;  // where the root server listens
  net::Secret secret{};     // proves membership on every connection
};

// Layout in the 128 bytes: magic "WFT1" (4), root address (SocketAddress::kWireBytes),
// secret (32), zero padding. decode() rejects a wrong magic or address with weftInvalidArgument.
void encodeUniqueId(const UniqueIdContents& contents, weftUniqueId* out);
Status decodeUniqueId(const weftUniqueId& id, UniqueIdContents* out);

// weftGetUniqueId: picks the local interface, starts a root server for one rendezvous round on an
// ephemeral port, and returns an id with a fresh random secret.
// The server thread lives until its round completes or WEFT_TIMEOUT passes (no limit when
// WEFT_TIMEOUT <= 0); a process-wide registry holds it and stops the survivors at exit.
Status createUniqueId(weftUniqueId* out);

// Joins the root servers whose round is over and returns how many are still serving (tests use
// it to check that servers do not pile up).
size_t activeRootServers();

}  // namespace weft::bootstrap
