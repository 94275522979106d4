// A shared-memory segment backed by an anonymous memfd. It has no name in /dev/shm, so nothing
// can be left behind: the memory is freed when the last process holding it unmaps it or dies.
// Other ranks of the host receive the descriptor over a Unix socket and map it.
#pragma once

#include <cstddef>
#include <string>

#include "base/status.h"

namespace weft::shm {

class Segment {
 public:
  Segment() = default;
  Segment(Segment&& other) noexcept;
  Segment& operator=(Segment&& other) noexcept;
  Segment(const Segment&) = delete;
  Segment& operator=(const Segment&) = delete;
  ~Segment();

  // A new zero-filled segment of `bytes` (pages are only committed when touched).
  static Status create(const std::string& label, size_t bytes, Segment* out);
  // Maps a segment received from another rank; takes ownership of `fd`.
  static Status attach(int fd, Segment* out);

  char* base() const { return base_; }
  size_t size() const { return size_; }
  int fd() const { return fd_; }
  // Closes the descriptor and keeps the mapping (which keeps the memory).
  void closeDescriptor();
  void reset();

 private:
  int fd_ = -1;
  char* base_ = nullptr;
  size_t size_ = 0;
};

}  // namespace weft::shm
