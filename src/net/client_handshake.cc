#include "net/client_handshake.h"

#include <cstring>
#include <string>

#include "net/socket.h"

namespace weft::net {

ClientHandshake::ClientHandshake(const Secret& secret, Purpose purpose, uint64_t commId,
                                 const void* trailer, size_t trailerBytes)
    : secret_(&secret), purpose_(purpose), commId_(commId) {
  trailerBytes_ = trailerBytes < kMaxTrailerBytes ? trailerBytes : kMaxTrailerBytes;
  if (trailerBytes_ > 0) {
    std::memcpy(proof_.data() + handshake::kProofBytes, trailer, trailerBytes_);
  }
}

const char* ClientHandshake::stageName() const {
  switch (stage_) {
    case Stage::kConnect:
      return "the connect";
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

std::string ClientHandshake::progress() const {
  size_t bytes = stage_ == Stage::kHello       ? hello_.size()
                 : stage_ == Stage::kChallenge ? challenge_.size()
                 : stage_ == Stage::kProof     ? handshake::kProofBytes + trailerBytes_
                                               : 0;
  return handshake::describeProgress(stageName(), done_, bytes);
}

Status ClientHandshake::makeHello() {
  handshake::Hello hello;
  hello.version = handshake::kVersion;
  hello.purpose = purpose_;
  hello.commId = commId_;
  WEFT_TRY(randomBytes(hello.nonce.data(), hello.nonce.size()));
  handshake::encodeHello(hello, hello_.data());
  return Status::ok();
}

Status ClientHandshake::advance(int fd) {
  while (stage_ != Stage::kDone) {
    bool complete = false;
    switch (stage_) {
      case Stage::kConnect:
        WEFT_TRY(finishConnect(fd, &complete));
        if (complete) WEFT_TRY(makeHello());
        break;
      case Stage::kHello:
        WEFT_TRY(sendToward(fd, hello_.data(), hello_.size(), &done_, stageName(), &complete));
        break;
      case Stage::kChallenge: {
        Status received =
            recvToward(fd, challenge_.data(), challenge_.size(), &done_, stageName(), &complete);
        if (received.code() == weftRemoteError && done_ == 0) {
          // The server only hangs up here when our hello did not match what it expects.
          return received.withContext(
              "authentication: the peer refused our hello (different communicator, purpose or "
              "weft version?)");
        }
        WEFT_TRY(received.withContext("authentication"));
        if (complete) {
          WEFT_TRY(handshake::answerChallenge(*secret_, hello_.data(), challenge_.data(),
                                              challenge_.size(), proof_.data()));
        }
        break;
      }
      case Stage::kProof:
        WEFT_TRY(sendToward(fd, proof_.data(), handshake::kProofBytes + trailerBytes_, &done_,
                            stageName(), &complete));
        break;
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
