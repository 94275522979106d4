#include "transports/shm/shm_segment.h"

#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

namespace weft::shm {

Segment::Segment(Segment&& other) noexcept {
  *this = std::move(other);
}

Segment& Segment::operator=(Segment&& other) noexcept {
  if (this != &other) {
    reset();
    fd_ = std::exchange(other.fd_, -1);
    base_ = std::exchange(other.base_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

Segment::~Segment() {
  reset();
}

void Segment::closeDescriptor() {
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
}

void Segment::reset() {
  if (base_ != nullptr) munmap(base_, size_);
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
  base_ = nullptr;
  size_ = 0;
}

Status Segment::create(const std::string& label, size_t bytes, Segment* out) {
  int fd = memfd_create(label.c_str(), MFD_CLOEXEC);
  if (fd < 0) return systemError("memfd_create", errno);
  if (ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    int error = errno;
    close(fd);
    return systemError("ftruncate of a " + std::to_string(bytes) + "-byte shared segment", error);
  }
  return attach(fd, out);
}

Status Segment::attach(int fd, Segment* out) {
  struct stat info;
  if (fstat(fd, &info) != 0) {
    int error = errno;
    close(fd);
    return systemError("fstat of a shared segment", error);
  }
  size_t bytes = static_cast<size_t>(info.st_size);
  void* base = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (base == MAP_FAILED) {
    int error = errno;
    close(fd);
    return systemError("mmap of a " + std::to_string(bytes) + "-byte shared segment", error);
  }
  Segment segment;
  segment.fd_ = fd;
  segment.base_ = static_cast<char*>(base);
  segment.size_ = bytes;
  *out = std::move(segment);
  return Status::ok();
}

}  // namespace weft::shm
