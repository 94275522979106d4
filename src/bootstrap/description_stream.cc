#include "bootstrap/description_stream.h"

#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

#include "bootstrap/ring_exchange.h"
#include "net/wire.h"

namespace weft::bootstrap {
namespace {

constexpr size_t kLengthBytes = 4;

// A byte queue that is appended at the back and consumed at the front, compacted lazily.
class ByteQueue {
 public:
  void append(const void* data, size_t bytes) {
    if (bytes == 0) return;
    const size_t at = bytes_.size();
    bytes_.resize(at + bytes);
    std::memcpy(bytes_.data() + at, data, bytes);
  }
  const uint8_t* front() const { return bytes_.data() + head_; }
  size_t size() const { return bytes_.size() - head_; }
  void consume(size_t bytes) {
    head_ += bytes;
    if (head_ == bytes_.size()) {
      bytes_.clear();
      head_ = 0;
    } else if (head_ > bytes_.size() / 2) {
      bytes_.erase(bytes_.begin(), bytes_.begin() + static_cast<std::ptrdiff_t>(head_));
      head_ = 0;
    }
  }

 private:
  std::vector<uint8_t> bytes_;
  size_t head_ = 0;
};

void appendFrame(ByteQueue* out, const std::string& description) {
  uint8_t length[kLengthBytes];
  net::wire::putU32(length, static_cast<uint32_t>(description.size()));
  out->append(length, sizeof(length));
  out->append(description.data(), description.size());
}

class Stream {
 public:
  Stream(const RingNeighbours& ring, size_t maxBytes, std::vector<std::string>* descriptions)
      : ring_(ring), maxBytes_(maxBytes), descriptions_(descriptions) {
    appendFrame(&outgoing_, (*descriptions_)[static_cast<size_t>(ring_.rank)]);
  }

  Status run(const Deadline& deadline);

 private:
  bool finished() const { return received_ == ring_.nranks - 1 && outgoing_.size() == 0; }
  int nextRank() const { return (ring_.rank + 1) % ring_.nranks; }
  int prevRank() const { return (ring_.rank - 1 + ring_.nranks) % ring_.nranks; }
  Status sendSome(bool* moved);
  Status receiveSome(bool* moved);
  Status timedOut() const;

  const RingNeighbours ring_;
  const size_t maxBytes_;
  std::vector<std::string>* descriptions_;
  ByteQueue outgoing_;
  int received_ = 0;                   // whole descriptions, from rank-1, rank-2, ... in that order
  uint8_t length_[kLengthBytes] = {};  // the current frame's length word
  size_t lengthDone_ = 0;
  size_t bodyDone_ = 0;
};

Status Stream::sendSome(bool* moved) {
  while (outgoing_.size() > 0) {
    ssize_t n =
        send(ring_.nextFd, outgoing_.front(), outgoing_.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      outgoing_.consume(static_cast<size_t>(n));
      *moved = true;
      continue;
    }
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return Status::ok();
    if (errno == EPIPE || errno == ECONNRESET) {
      return remoteError(rankName(nextRank()) + " closed the connection");
    }
    return systemError("sending to " + rankName(nextRank()), errno);
  }
  return Status::ok();
}

// Reads exactly the current frame's length word, then its description, never further: what
// follows the last description on this socket belongs to the bootstrap's next operation.
Status Stream::receiveSome(bool* moved) {
  const int n = ring_.nranks;
  const int prev = prevRank();
  while (received_ < n - 1) {
    const int origin = ((ring_.rank - 1 - received_) % n + n) % n;
    std::string& description = (*descriptions_)[static_cast<size_t>(origin)];
    uint8_t* target;
    size_t wanted;
    if (lengthDone_ < kLengthBytes) {
      target = length_ + lengthDone_;
      wanted = kLengthBytes - lengthDone_;
    } else {
      target = reinterpret_cast<uint8_t*>(description.data()) + bodyDone_;
      wanted = description.size() - bodyDone_;
    }
    ssize_t got = wanted == 0 ? 0 : recv(ring_.prevFd, target, wanted, MSG_DONTWAIT);
    if (wanted > 0 && got <= 0) {
      if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
        return Status::ok();
      }
      if (got == 0 || errno == ECONNRESET) {
        return remoteError(rankName(prev) + " closed the connection");
      }
      return systemError("receiving from " + rankName(prev), errno);
    }
    *moved = true;
    if (lengthDone_ < kLengthBytes) {
      lengthDone_ += static_cast<size_t>(got);
      if (lengthDone_ < kLengthBytes) continue;
      const uint32_t bytes = net::wire::getU32(length_);
      if (bytes > maxBytes_) {
        return remoteError(rankName(prev) + " forwarded a " + std::to_string(bytes) +
                           "-byte description for " + rankName(origin) + " (at most " +
                           std::to_string(maxBytes_) + ")");
      }
      description.resize(bytes);
      bodyDone_ = 0;
      continue;
    }
    bodyDone_ += static_cast<size_t>(got);
    if (bodyDone_ < description.size()) continue;
    // Whole: forward it unless it started at the next rank (it has been all the way round).
    ++received_;
    lengthDone_ = 0;
    if (origin != nextRank()) appendFrame(&outgoing_, description);
  }
  return Status::ok();
}

Status Stream::timedOut() const {
  const int n = ring_.nranks;
  std::string what = std::to_string(n - 1 - received_) + " descriptions still to come from " +
                     rankName(prevRank());
  if (outgoing_.size() > 0) {
    what +=
        " and " + std::to_string(outgoing_.size()) + " bytes to send to " + rankName(nextRank());
  }
  return timeoutError(what + " at the deadline");
}

Status Stream::run(const Deadline& deadline) {
  while (!finished()) {
    bool moved = false;
    WEFT_TRY(sendSome(&moved));
    WEFT_TRY(receiveSome(&moved));
    if (moved || finished()) continue;
    pollfd fds[2];
    nfds_t count = 0;
    if (outgoing_.size() > 0) fds[count++] = pollfd{ring_.nextFd, POLLOUT, 0};
    if (received_ < ring_.nranks - 1) fds[count++] = pollfd{ring_.prevFd, POLLIN, 0};
    int rc = poll(fds, count, deadline.remainingMs());
    if (rc == 0) return timedOut();
    if (rc < 0 && errno != EINTR) return systemError("poll", errno);
  }
  return Status::ok();
}

}  // namespace

Status streamDescriptions(const RingNeighbours& ring, size_t maxBytes, Deadline deadline,
                          std::vector<std::string>* descriptions) {
  if (ring.nranks <= 1) return Status::ok();
  return Stream(ring, maxBytes, descriptions).run(deadline);
}

}  // namespace weft::bootstrap
