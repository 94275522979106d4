#include "transports/conformance/traffic.h"

#include <algorithm>
#include <cstring>

namespace weft::test::conformance {
namespace {

uint64_t mix(uint64_t value) {
  value += 0x9e3779b97f4a7c15ull;
  value = (value ^ (value >> 30)) * 0xbf58476d1ce4e5b9ull;
  value = (value ^ (value >> 27)) * 0x94d049bb133111ebull;
  return value ^ (value >> 31);
}

}  // namespace

void fillPattern(void* buf, size_t bytes, uint64_t seed) {
  auto* out = static_cast<unsigned char*>(buf);
  size_t offset = 0;
  for (uint64_t word = 0; offset < bytes; ++word) {
    const uint64_t value = mix(seed ^ (word * 0x100000001b3ull));
    const size_t take = std::min(sizeof(value), bytes - offset);
    std::memcpy(out + offset, &value, take);
    offset += take;
  }
}

size_t firstDifference(const void* buf, size_t bytes, uint64_t seed) {
  const auto* in = static_cast<const unsigned char*>(buf);
  size_t offset = 0;
  for (uint64_t word = 0; offset < bytes; ++word) {
    const uint64_t value = mix(seed ^ (word * 0x100000001b3ull));
    const size_t take = std::min(sizeof(value), bytes - offset);
    if (std::memcmp(in + offset, &value, take) != 0) {
      const auto* expected = reinterpret_cast<const unsigned char*>(&value);
      for (size_t i = 0; i < take; ++i) {
        if (in[offset + i] != expected[i]) return offset + i;
      }
    }
    offset += take;
  }
  return bytes;
}

uint64_t Traffic::seedFor(int from, int to, uint64_t index) const {
  return mix((static_cast<uint64_t>(from) << 48) ^ (static_cast<uint64_t>(to) << 32) ^ index);
}

Xfer& Traffic::send(int peer, size_t bytes, uint64_t tag, uint64_t index) {
  Entry& entry = *entries_.emplace_back(std::make_unique<Entry>());
  entry.seed = seedFor(rank_, peer, index);
  // A zero-byte message has no buffer, as a zero-count call may pass none.
  if (bytes > 0) {
    entry.buffer = std::make_unique_for_overwrite<unsigned char[]>(bytes);
    fillPattern(entry.buffer.get(), bytes, entry.seed);
  }
  entry.xfer.kind = Xfer::Kind::kSend;
  entry.xfer.peer = peer;
  entry.xfer.tag = tag;
  entry.xfer.buf = entry.buffer.get();
  entry.xfer.bytes = bytes;
  return entry.xfer;
}

Xfer& Traffic::recv(int peer, size_t bytes, uint64_t tag, uint64_t index) {
  Entry& entry = *entries_.emplace_back(std::make_unique<Entry>());
  entry.seed = seedFor(peer, rank_, index);
  if (bytes > 0) {
    entry.buffer = std::make_unique<unsigned char[]>(bytes);  // zeroed: no stale pattern
  }
  entry.xfer.kind = Xfer::Kind::kRecv;
  entry.xfer.peer = peer;
  entry.xfer.tag = tag;
  entry.xfer.buf = entry.buffer.get();
  entry.xfer.bytes = bytes;
  return entry.xfer;
}

void Traffic::postAll(Transport& transport) {
  for (; posted_ < entries_.size(); ++posted_) transport.post(&entries_[posted_]->xfer);
}

std::vector<Xfer*> Traffic::xfers() {
  std::vector<Xfer*> all;
  for (auto& entry : entries_) all.push_back(&entry->xfer);
  return all;
}

std::string Traffic::verify() const {
  std::string problems;
  int shown = 0;
  for (size_t i = 0; i < entries_.size() && shown < 5; ++i) {
    const Entry& entry = *entries_[i];
    const Xfer& xfer = entry.xfer;
    const bool sending = xfer.kind == Xfer::Kind::kSend;
    const std::string what = "rank " + std::to_string(rank_) + ": transfer #" + std::to_string(i) +
                             (sending ? " (send to " : " (receive from ") +
                             std::to_string(xfer.peer) + ", " + std::to_string(xfer.bytes) +
                             " bytes)";
    std::string problem;
    if (!xfer.done) {
      problem = "not done";
    } else if (!xfer.status.isOk()) {
      problem = "failed: " + xfer.status.message();
    } else if (!sending && xfer.bytes > 0) {
      const size_t at = firstDifference(entry.buffer.get(), xfer.bytes, entry.seed);
      if (at < xfer.bytes) problem = "wrong bytes from offset " + std::to_string(at);
    }
    if (!problem.empty()) {
      problems += what + ": " + problem + "\n";
      ++shown;
    }
  }
  return problems;
}

void addExchange(Traffic& traffic, int rank, const std::vector<int>& peers, const SizesFn& sizes,
                 uint64_t round) {
  std::vector<std::vector<size_t>> out, in;
  size_t longest = 0;
  for (int peer : peers) {
    out.push_back(sizes(rank, peer));
    in.push_back(sizes(peer, rank));
    longest = std::max({longest, out.back().size(), in.back().size()});
  }
  const uint64_t base = round << 20;
  for (size_t i = 0; i < longest; ++i) {
    for (size_t p = 0; p < peers.size(); ++p) {
      const int peer = peers[p];
      if (i < in[p].size()) traffic.recv(peer, in[p][i], tagFor(peer, rank, base + i), base + i);
      if (i < out[p].size()) traffic.send(peer, out[p][i], tagFor(rank, peer, base + i), base + i);
    }
  }
}

}  // namespace weft::test::conformance
