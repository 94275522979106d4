#include "bootstrap/root_connection.h"

#include <sys/socket.h>

#include <cerrno>
#include <utility>

namespace weft::bootstrap {

RootConnection::RootConnection(net::Socket socket, net::SocketAddress peer,
                               const net::Secret& secret, Deadline deadline)
    : socket_(std::move(socket)),
      peer_(peer),
      deadline_(deadline),
      handshake_(secret, net::Purpose::kRendezvous, 0) {}

std::string RootConnection::stateName() const {
  switch (state_) {
    case State::kHandshake:
      return handshake_.progress();
    case State::kJoinHeader:
      return "the join header";
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
    case State::kHandshake:
      return handshake_.wantsWrite() ? EPOLLOUT : EPOLLIN;
    case State::kReplying:
      return EPOLLOUT;
    case State::kDone:
      return 0;
    default:
      return EPOLLIN;
  }
}

Status RootConnection::onReadable() {
  while (true) {
    switch (state_) {
      case State::kHandshake:
        WEFT_TRY(handshake_.advance(socket_.fd()));
        if (!handshake_.done()) return Status::ok();  // waiting for the socket
        state_ = State::kJoinHeader;
        break;
      case State::kJoinHeader: {
        bool complete = false;
        WEFT_TRY(net::recvToward(socket_.fd(), header_.data(), header_.size(), &have_,
                                 "the join header", &complete));
        if (!complete) return Status::ok();
        WEFT_TRY(rendezvous::decodeJoinHeader(header_.data(), &join_));
        state_ = State::kJoined;
        // A joined rank waits for the round, which the server's own deadline bounds.
        deadline_ = Deadline::never();
        return Status::ok();
      }
      case State::kJoined: {
        // A joined rank has nothing more to say; input here is a hang-up or a protocol breach.
        uint8_t byte;
        ssize_t n = recv(socket_.fd(), &byte, 1, 0);
        if (n == 0) return remoteError("disconnected while waiting for the other ranks");
        if (n > 0) return remoteError("sent unexpected bytes after its join");
        if (errno == EAGAIN || errno == EWOULDBLOCK) return Status::ok();
        if (errno == ECONNRESET)
          return remoteError("disconnected while waiting for the other ranks");
        if (errno != EINTR) return systemError("receiving after the join", errno);
        break;
      }
      default:
        return Status::ok();
    }
  }
}

Status RootConnection::onWritable() {
  if (state_ == State::kHandshake) return onReadable();  // the challenge is the handshake's
  return flush();
}

Status RootConnection::flush() {
  if (state_ != State::kReplying) return Status::ok();
  bool complete = false;
  WEFT_TRY(net::sendToward(socket_.fd(), reply_->data(), reply_->size(), &replySent_, "the reply",
                           &complete));
  if (complete) state_ = State::kDone;
  return Status::ok();
}

void RootConnection::startReply(rendezvous::Buffer reply, Deadline deadline) {
  reply_ = std::move(reply);
  replySent_ = 0;
  deadline_ = deadline;
  state_ = State::kReplying;
}

}  // namespace weft::bootstrap
