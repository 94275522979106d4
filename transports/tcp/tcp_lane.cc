#include "transports/tcp/tcp_lane.h"

#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>

#include "transports/message_mismatch.h"

namespace weft::tcp {
namespace {

// Enough iovecs to move many small messages per system call (alltoall, pipelined slices).
constexpr int kMaxIov = 64;

void finishPart(Part* part) {
  auto* state = reinterpret_cast<XferState*>(part->xfer->scratch);
  if (--state->partsLeft == 0 && !part->xfer->done) part->xfer->complete();
}

// The error a failure notice becomes; the transport prefixes the peer's name.
Status noticeError(uint64_t culprit) {
  return remoteError(culprit == kNoCulprit
                         ? "it stopped after a failure of its own (a timeout or an abort)"
                         : "it stopped after a failure caused by rank " + std::to_string(culprit));
}

int culpritOf(const WireHeader& header) {
  return header.bytes == kNoCulprit ? -1 : static_cast<int>(header.bytes);
}

Status checkHeader(const Part& part) {
  if (part.header.tag == part.xfer->tag && part.header.bytes == part.length) return Status::ok();
  if (part.header.tag == kFailureTag) return noticeError(part.header.bytes);
  if (part.header.tag == kGoodbyeTag) {
    return invalidUsage("message mismatch: expected " +
                        describeMessage(part.xfer->tag, part.length) +
                        ", received a goodbye (the peer destroyed its communicator)");
  }
  return messageMismatch(part.xfer->tag, part.length, part.header.tag, part.header.bytes);
}

// Appends the unfinished remainder of a part (header, then payload) to an iovec list.
int addIov(Part* part, iovec* iov, int n) {
  if (part->headerDone < sizeof(WireHeader)) {
    iov[n++] = {reinterpret_cast<char*>(&part->header) + part->headerDone,
                sizeof(WireHeader) - part->headerDone};
  }
  if (part->payloadDone < part->length) {
    iov[n++] = {part->data + part->payloadDone, part->length - part->payloadDone};
  }
  return n;
}

// Accounts `moved` bytes against the queue's parts in order; returns the first header check
// failure (receive side only).
Status advance(PartQueue& queue, size_t moved, bool receiving) {
  while (!queue.empty()) {
    Part* part = queue.front();
    if (part->headerDone < sizeof(WireHeader)) {
      size_t take = std::min(moved, sizeof(WireHeader) - part->headerDone);
      part->headerDone += take;
      moved -= take;
      if (part->headerDone < sizeof(WireHeader)) break;
      if (receiving) WEFT_TRY(checkHeader(*part));
    }
    size_t take = std::min(moved, part->length - part->payloadDone);
    part->payloadDone += take;
    moved -= take;
    if (part->payloadDone < part->length) break;
    queue.pop();
    finishPart(part);
  }
  return Status::ok();
}

}  // namespace

Lane::~Lane() {
  close(false);
}

void Lane::startDial(int fd, std::unique_ptr<net::ClientHandshake> dial) {
  fd_ = fd;
  dial_ = std::move(dial);
  hungUp = false;  // a failed earlier dial's
  unexpected = false;
}

Status Lane::advanceDial() {
  if (!dial_->done()) {
    WEFT_TRY(dial_->advance(fd_));
    if (!dial_->done()) return Status::ok();
  }
  uint8_t admitted = 0;
  ssize_t got = recv(fd_, &admitted, 1, MSG_DONTWAIT);
  if (got < 0) {
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return Status::ok();
    return remoteError(std::string("the connection failed before the peer took it: ") +
                       std::strerror(errno));
  }
  if (got == 0) return remoteError("the peer closed the connection before taking it");
  if (admitted != kLaneAdmitted) {
    return remoteError("the peer answered the lane hello with byte " + std::to_string(admitted) +
                       " (not a weft tcp lane?)");
  }
  dial_.reset();
  readable = true;
  writable = true;
  return Status::ok();
}

Status Lane::writeSome() {
  while (!sends_.empty() && writable) {
    iovec iov[kMaxIov];
    int n = 0;
    for (Part* part = sends_.front(); part != nullptr && n + 2 <= kMaxIov; part = part->next) {
      n = addIov(part, iov, n);
    }
    msghdr message{};
    message.msg_iov = iov;
    message.msg_iovlen = n;
    ssize_t sent = n == 0 ? 0 : sendmsg(fd_, &message, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (sent < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        writable = false;
        break;
      }
      return remoteError(std::string("send failed: ") + std::strerror(errno));
    }
    WEFT_TRY(advance(sends_, static_cast<size_t>(sent), false));
  }
  return Status::ok();
}

Status Lane::readSome() {
  while (!recvs_.empty() && readable) {
    iovec iov[kMaxIov];
    int n = 0;
    for (Part* part = recvs_.front(); part != nullptr && n + 2 <= kMaxIov; part = part->next) {
      n = addIov(part, iov, n);
    }
    msghdr message{};
    message.msg_iov = iov;
    message.msg_iovlen = n;
    ssize_t got = recvmsg(fd_, &message, MSG_DONTWAIT);
    if (got < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        readable = false;
        break;
      }
      return remoteError(std::string("receive failed: ") + std::strerror(errno) +
                         " (the peer process probably died)");
    }
    if (got == 0) {
      return remoteError("connection closed while " +
                         std::to_string(recvs_.front()->length - recvs_.front()->payloadDone) +
                         " bytes were still expected (the peer process exited or died)");
    }
    Status advanced = advance(recvs_, static_cast<size_t>(got), true);
    if (!advanced.isOk()) {
      // The header that failed the check is the front part's (advance stops there).
      if (!recvs_.empty() && recvs_.front()->header.tag == kFailureTag) {
        noticed = true;
        noticeCulprit = culpritOf(recvs_.front()->header);
      }
      return advanced;
    }
  }
  return Status::ok();
}

Status Lane::inspectUnexpected() {
  WireHeader header{};
  ssize_t got = recv(fd_, &header, sizeof(header), MSG_PEEK | MSG_DONTWAIT);
  if (got < 0) {
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return Status::ok();
    return remoteError(std::string("connection failed: ") + std::strerror(errno) +
                       " (the peer process died)");
  }
  if (got == 0) {
    return remoteError("connection closed without a goodbye (the peer process died or aborted)");
  }
  if (got == static_cast<ssize_t>(sizeof(header)) && header.tag == kGoodbyeTag) departed = true;
  if (got == static_cast<ssize_t>(sizeof(header)) && header.tag == kFailureTag) {
    noticed = true;
    noticeCulprit = culpritOf(header);
    return noticeError(header.bytes);
  }
  // Anything else is data not yet asked for; it is judged when a receive is posted.
  return Status::ok();
}

void Lane::failAll(const Status& why) {
  if (!sends_.empty() && sends_.front()->headerDone > 0) sendCut_ = true;
  for (PartQueue* queue : {&sends_, &recvs_}) {
    while (!queue->empty()) {
      Part* part = queue->pop();
      if (!part->xfer->done) part->xfer->complete(why);
    }
  }
}

void Lane::sendFailureNotice(int culprit) {
  if (!ready() || sendCut_ || (!sends_.empty() && sends_.front()->headerDone > 0)) return;
  WireHeader notice{kFailureTag, culprit < 0 ? kNoCulprit : static_cast<uint64_t>(culprit)};
  [[maybe_unused]] ssize_t ignored =
      send(fd_, &notice, sizeof(notice), MSG_NOSIGNAL | MSG_DONTWAIT);
}

void Lane::close(bool graceful) {
  if (fd_ < 0) return;
  if (graceful && !departed && ready()) {
    WireHeader goodbye{kGoodbyeTag, 0};
    // The send buffer is empty at this point (every transfer completed), so this does not block.
    [[maybe_unused]] ssize_t ignored =
        send(fd_, &goodbye, sizeof(goodbye), MSG_NOSIGNAL | MSG_DONTWAIT);
    shutdown(fd_, SHUT_WR);
  }
  ::close(fd_);
  fd_ = -1;
  dial_.reset();
}

}  // namespace weft::tcp
