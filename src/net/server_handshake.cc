#include "net/server_handshake.h"

#include <string>

#include "net/socket.h"

namespace weft::net {

const char* ServerHandshake::stageName() const {
  switch (stage_) {
    case Stage::kHello:
      return "the hello";
    case Stage::kChallenge:
      return "the challenge";
    case Stage::kProof:
      return "the proof";
    case Stage::kDone:
      return "nothing (authenticated)";
  }
  return "?";
}

std::string ServerHandshake::progress() const {
  size_t bytes = stage_ == Stage::kHello       ? hello_.size()
                 : stage_ == Stage::kChallenge ? challenge_.size()
                 : stage_ == Stage::kProof     ? proof_.size()
                                               : 0;
  return handshake::describeProgress(stageName(), done_, bytes);
}

Status ServerHandshake::helloReceived() {
  handshake::Hello hello;
  WEFT_TRY(handshake::decodeHello(hello_.data(), hello_.size(), &hello));
  WEFT_TRY(handshake::checkHelloExpectations(hello, purpose_, commId_));
  WEFT_TRY(randomBytes(serverNonce_.data(), serverNonce_.size()));
  return handshake::makeChallenge(*secret_, hello_.data(), serverNonce_, challenge_.data());
}

Status ServerHandshake::advance(int fd) {
  while (stage_ != Stage::kDone) {
    bool complete = false;
    switch (stage_) {
      case Stage::kHello:
        WEFT_TRY(recvToward(fd, hello_.data(), hello_.size(), &done_, stageName(), &complete));
        if (complete) WEFT_TRY(helloReceived());
        break;
      case Stage::kChallenge:
        WEFT_TRY(
            sendToward(fd, challenge_.data(), challenge_.size(), &done_, stageName(), &complete));
        break;
      case Stage::kProof: {
        Status received =
            recvToward(fd, proof_.data(), proof_.size(), &done_, stageName(), &complete);
        if (received.code() == weftRemoteError && done_ == 0) {
          // A client checks our MAC first and hangs up when it does not verify.
          return remoteError("hung up instead of proving it knows the secret (wrong secret?)");
        }
        WEFT_TRY(received);
        if (complete) {
          WEFT_TRY(handshake::checkProof(*secret_, hello_.data(), serverNonce_, proof_.data(),
                                         proof_.size()));
        }
        break;
      }
      case Stage::kDone:
        break;
    }
    if (!complete) return Status::ok();  // the socket has no more for now
    stage_ = static_cast<Stage>(static_cast<int>(stage_) + 1);
    done_ = 0;
  }
  return Status::ok();
}

}  // namespace weft::net
