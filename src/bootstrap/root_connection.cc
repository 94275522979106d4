#include "bootstrap/root_connection.h"

#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <utility>

namespace weft::bootstrap {

RootConnection::RootConnection(net::Socket socket, net::SocketAddress peer,
                               const net::Secret& secret, Deadline deadline)
    : socket_(std::move(socket)), peer_(peer), secret_(secret), deadline_(deadline) {}

const char* RootConnection::stateName() const {
  switch (state_) {
    case State::kHello:
      return "the hello";
    case State::kChallenge:
      return "the challenge";
    case State::kProof:
      return "the proof";
    case State::kJoinHeader:
      return "the join header";
    case State::kJoinBody:
      return "the join description";
    case State::kJoined:
      return "the wait for the other ranks";
    case State::kReplying:
      return "the reply";
    case State::kDone:
      return "shutdown";
  }
  return "?";
}

uint32_t RootConnection::wantedEvents() const {
  switch (state_) {
    case State::kChallenge:
    case State::kReplying:
      return EPOLLOUT;
    case State::kDone:
      return 0;
    default:
      return EPOLLIN;
  }
}

Status RootConnection::readMessage(bool* complete) {
  *complete = false;
  size_t need = 0;
  uint8_t* target = inbox_.data();
  switch (state_) {
    case State::kHello:
      need = net::handshake::kHelloBytes;
      break;
    case State::kProof:
      need = net::handshake::kProofBytes;
      break;
    case State::kJoinHeader:
      need = rendezvous::kJoinHeaderBytes;
      break;
    case State::kJoinBody:
      need = description_.size();
      target = reinterpret_cast<uint8_t*>(description_.data());
      break;
    default:
      return internalError("RootConnection::readMessage in a non-reading state");
  }
  while (have_ < need) {
    ssize_t n = recv(socket_.fd(), target + have_, need - have_, 0);
    if (n > 0) {
      have_ += static_cast<size_t>(n);
      continue;
    }
    if (n == 0 && state_ == State::kProof && have_ == 0) {
      // The client checks our MAC first and hangs up when it does not verify.
      return remoteError("hung up instead of proving it knows the secret (wrong secret?)");
    }
    if (n == 0) {
      return remoteError(std::string("closed the connection during ") + stateName() + " (" +
                         std::to_string(have_) + " of " + std::to_string(need) + " bytes)");
    }
    if (errno == EAGAIN || errno == EWOULDBLOCK) return Status::ok();
    if (errno != EINTR) return systemError(std::string("receiving ") + stateName(), errno);
  }
  have_ = 0;
  *complete = true;
  return Status::ok();
}

Status RootConnection::messageComplete() {
  switch (state_) {
    case State::kHello: {
      std::copy_n(inbox_.begin(), hello_.size(), hello_.begin());
      net::handshake::Hello hello;
      WEFT_TRY(net::handshake::decodeHello(hello_.data(), hello_.size(), &hello));
      WEFT_TRY(net::handshake::checkHelloExpectations(hello, net::Purpose::kRendezvous, 0));
      WEFT_TRY(net::randomBytes(serverNonce_.data(), serverNonce_.size()));
      WEFT_TRY(
          net::handshake::makeChallenge(secret_, hello_.data(), serverNonce_, challenge_.data()));
      outData_ = challenge_.data();
      outLeft_ = challenge_.size();
      state_ = State::kChallenge;
      return Status::ok();
    }
    case State::kProof:
      WEFT_TRY(net::handshake::checkProof(secret_, hello_.data(), serverNonce_, inbox_.data(),
                                          net::handshake::kProofBytes));
      state_ = State::kJoinHeader;
      return Status::ok();
    case State::kJoinHeader:
      WEFT_TRY(rendezvous::decodeJoinHeader(inbox_.data(), &join_));
      description_.resize(join_.descriptionBytes);
      state_ = join_.descriptionBytes > 0 ? State::kJoinBody : State::kJoined;
      break;
    case State::kJoinBody:
      state_ = State::kJoined;
      break;
    default:
      return internalError("RootConnection::messageComplete in a non-reading state");
  }
  // A joined rank waits for the round, which the server's own deadline bounds.
  if (state_ == State::kJoined) deadline_ = Deadline::never();
  return Status::ok();
}

Status RootConnection::onReadable() {
  while (true) {
    switch (state_) {
      case State::kHello:
      case State::kProof:
      case State::kJoinHeader:
      case State::kJoinBody: {
        bool complete = false;
        WEFT_TRY(readMessage(&complete));
        if (!complete) return Status::ok();
        WEFT_TRY(messageComplete());
        if (state_ == State::kChallenge) WEFT_TRY(flush());
        if (state_ == State::kJoined) return Status::ok();
        break;
      }
      case State::kJoined: {
        // A joined rank has nothing more to say; input here is a hang-up or a protocol breach.
        uint8_t byte;
        ssize_t n = recv(socket_.fd(), &byte, 1, 0);
        if (n == 0) return remoteError("disconnected while waiting for the other ranks");
        if (n > 0) return remoteError("sent unexpected bytes after its join");
        if (errno == EAGAIN || errno == EWOULDBLOCK) return Status::ok();
        if (errno != EINTR) return systemError("receiving after the join", errno);
        break;
      }
      default:
        return Status::ok();
    }
    if (state_ == State::kChallenge) return Status::ok();  // still flushing; wait for EPOLLOUT
  }
}

Status RootConnection::onWritable() {
  return flush();
}

Status RootConnection::flush() {
  while (outLeft_ > 0) {
    ssize_t n = send(socket_.fd(), outData_, outLeft_, MSG_NOSIGNAL);
    if (n > 0) {
      outData_ += n;
      outLeft_ -= static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return Status::ok();
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EPIPE || errno == ECONNRESET)) {
      return remoteError(std::string("closed the connection during ") + stateName());
    }
    return systemError(std::string("sending ") + stateName(), errno);
  }
  if (state_ == State::kChallenge) state_ = State::kProof;
  if (state_ == State::kReplying) state_ = State::kDone;
  return Status::ok();
}

void RootConnection::startReply(rendezvous::Buffer reply, Deadline deadline) {
  reply_ = std::move(reply);
  outData_ = reply_->data();
  outLeft_ = reply_->size();
  deadline_ = deadline;
  state_ = State::kReplying;
}

}  // namespace weft::bootstrap
