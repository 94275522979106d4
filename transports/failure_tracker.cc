#include "transports/failure_tracker.h"

namespace weft {

Status FailureTracker::peerFailed(const std::string& link,
                                  const std::vector<std::string>& peerNames, int peer,
                                  const Status& why, bool notice, int culprit) {
  const bool named =
      notice && culprit >= 0 && culprit != peer && culprit < static_cast<int>(peerNames.size());
  std::string message =
      link + peerNames[peer] + ": " +
      (named ? "it stopped after a failure caused by " + peerNames[culprit] : why.message());
  if (notice && noticedCulprit_ < 0) noticedCulprit_ = named ? culprit : peer;
  if (!notice && brokenPeer_ < 0) brokenPeer_ = peer;
  return Status(why.code() == weftSuccess ? weftRemoteError : why.code(), message);
}

}  // namespace weft
