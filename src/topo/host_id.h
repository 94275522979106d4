// Host identity: ranks with equal identities share a machine (and, later, shared memory).
#pragma once

#include <cstdint>
#include <string>

namespace weft::topo {

// A hash of the host name and the kernel's boot id, so two containers with the same host name on
// different machines differ, and a rebooted machine is a new host. `override` (WEFT_HOSTID or the
// config's hostId) replaces both when non-empty.
uint64_t hostIdentity(const std::string& override);
std::string hostName();
// The running kernel alone (its boot id): processes with equal ids share the same CPUs even
// where their host identities differ (network namespaces with their own host names).
uint64_t machineIdentity();

}  // namespace weft::topo
