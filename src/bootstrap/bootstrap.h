// The out-of-band network of a communicator: the rendezvous through the root (which tells each
// rank only its ring successor's address), then a ring of authenticated TCP connections (rank r
// connects to r+1) that gathers the ranks' descriptions and then serves small control exchanges
// such as split and check mode. Not for bulk data; that is the transports' job.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/deadline.h"
#include "base/status.h"
#include "bootstrap/unique_id.h"

namespace weft::bootstrap {

class Bootstrap {
 public:
  // Joins the rendezvous at id.root as `rank` of `nranks`, connects the ring, and gathers every
  // rank's `description` (opaque bytes, at most 64 KiB) around it: every rank receives every
  // description.
  static Status create(const UniqueIdContents& id, int rank, int nranks,
                       const std::string& description, Deadline deadline,
                       std::unique_ptr<Bootstrap>* out);
  virtual ~Bootstrap() = default;

  virtual int rank() const = 0;
  virtual int nranks() const = 0;
  // Random per communicator, chosen by the root; binds data connections to this communicator.
  virtual uint64_t commId() const = 0;
  virtual const net::Secret& secret() const = 0;
  // descriptions()[r] is what rank r passed to create().
  virtual const std::vector<std::string>& descriptions() const = 0;

  // Ring allgather of equal-size blocks: all[r * bytes ...] receives rank r's block.
  virtual Status allgather(const void* mine, size_t bytes, void* all, Deadline deadline) = 0;
  virtual Status barrier(Deadline deadline) = 0;
  virtual void close() = 0;
};

}  // namespace weft::bootstrap
