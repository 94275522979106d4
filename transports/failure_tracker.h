// What every transport remembers about a failure, so that it can say where the failure started
// (Transport::findCulprit) and word the error each transfer fails with the same way.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"

namespace weft {

class FailureTracker {
 public:
  // The status transfers with `peer` fail with, "<link><peer name>: <why>". notice: the peer
  // sent a failure notice naming `culprit` (-1: none), which then becomes the evidence; a
  // broken link without a notice is weaker evidence and only counts when no notice came.
  Status peerFailed(const std::string& link, const std::vector<std::string>& peerNames, int peer,
                    const Status& why, bool notice = false, int culprit = -1);
  // See Transport::findCulprit(): the first noticed culprit, else the first broken peer, or -1.
  int culprit() const { return noticedCulprit_ >= 0 ? noticedCulprit_ : brokenPeer_; }

 private:
  int noticedCulprit_ = -1;
  int brokenPeer_ = -1;
};

}  // namespace weft
