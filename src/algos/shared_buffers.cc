#include "algos/shared_buffers.h"

#include <algorithm>
#include <cstring>

#if defined(__x86_64__)
#include <emmintrin.h>
#endif

#include "algos/shm_window.h"
#include "transports/shared_windows.h"

namespace weft::shared_buffers {
namespace {

mem::SharedExtent extentOf(const void* buf, size_t bytes) {
  if (buf == nullptr || bytes == 0) return {};
  return mem::find(buf, bytes).value_or(mem::SharedExtent{});
}

}  // namespace

Offer offer(AlgoContext& ctx, int flag, const void* send, size_t sendBytes, const void* recv,
            size_t recvBytes) {
  SharedWindows& shared = *ctx.windows();
  Offer mine{extentOf(send, sendBytes), extentOf(recv, recvBytes)};
  // Offered only where every rank can reach every other's memory, so that no reader fails to.
  if ((mine.send.shareable() || mine.recv.shareable()) && !shared.everyRankReadsEveryOther()) {
    mine = Offer{};
  }
  char* payload = shared.flagPayload(shared.localIndex(), flag);
  static_assert(2 * sizeof(mem::SharedExtent) <= SharedWindows::kFlagPayloadBytes);
  std::memcpy(payload, &mine.send, sizeof mine.send);
  std::memcpy(payload + sizeof mine.send, &mine.recv, sizeof mine.recv);
  return mine;
}

Status reach(AlgoContext& ctx, int flag, const void* send, size_t sendBytes, void* recv,
             size_t recvBytes, Reached* out) {
  SharedWindows& shared = *ctx.windows();
  const int size = shared.localSize();
  const int me = shared.localIndex();
  out->send.assign(size, nullptr);
  out->recv.assign(size, nullptr);
  out->allSends = out->all = true;
  for (int index = 0; index < size; ++index) {
    Offer theirs;
    const char* payload = shared.flagPayload(index, flag);
    std::memcpy(&theirs.send, payload, sizeof theirs.send);
    std::memcpy(&theirs.recv, payload + sizeof theirs.send, sizeof theirs.recv);
    out->allSends = out->allSends && theirs.send.shareable();
    out->all = out->allSends && theirs.recv.shareable() && out->all;
    if (index == me) {
      if (theirs.send.shareable()) out->send[index] = static_cast<const char*>(send);
      if (theirs.recv.shareable()) out->recv[index] = static_cast<char*>(recv);
      continue;
    }
    const int rank = shared.rankOf(index);
    const pid_t pid = shared.processOf(index);
    if (theirs.send.shareable()) {
      char* send = nullptr;
      WEFT_TRY(ctx.peerMappings().resolve(rank, pid, theirs.send, sendBytes, &send));
      out->send[index] = send;
    }
    if (theirs.recv.shareable()) {
      WEFT_TRY(ctx.peerMappings().resolve(rank, pid, theirs.recv, recvBytes, &out->recv[index]));
    }
  }
  return Status::ok();
}

Status reachSend(AlgoContext& ctx, int flag, int index, size_t sendBytes, const char** out) {
  SharedWindows& shared = *ctx.windows();
  mem::SharedExtent send;
  std::memcpy(&send, shared.flagPayload(index, flag), sizeof send);
  *out = nullptr;
  if (!send.shareable()) return Status::ok();
  char* reached = nullptr;
  WEFT_TRY(ctx.peerMappings().resolve(shared.rankOf(index), shared.processOf(index), send,
                                      sendBytes, &reached));
  *out = reached;
  return Status::ok();
}

void reduceShareOfChunk(AlgoContext& ctx, const Reached& peers, uint64_t round, size_t offset,
                        size_t count) {
  SharedWindows& shared = *ctx.windows();
  const size_t typeSize = ctx.typeSize();
  const int size = shared.localSize();
  const int me = shared.localIndex();
  const ring::Range share = ring::blockOf(count, size, me);
  std::vector<const char*> sources(size);
  for (int index = 0; index < size; ++index) {
    sources[index] = (peers.send[index] != nullptr ? peers.send[index] + offset * typeSize
                                                   : window::area(shared, index, round)) +
                     share.offset * typeSize;
  }
  foldOwnFirst(ctx, window::area(shared, me, round) + share.offset * typeSize, sources,
               share.count);
}

void foldOwnFirst(AlgoContext& ctx, char* dst, const std::vector<const char*>& sources,
                  size_t count) {
  const int me = ctx.windows()->localIndex();
  const char* first = sources[me];
  if (sources.size() == 1 && dst != first) std::memcpy(dst, first, count * ctx.typeSize());
  for (int index = 0; index < static_cast<int>(sources.size()); ++index) {
    if (index == me) continue;
    ctx.reduce(dst, first, sources[index], count);
    first = dst;
  }
  ctx.finish(dst, count);
}

namespace {

// memcpy that bypasses the caches where the CPU has non-temporal stores (x86-64: SSE2), then
// fences them.
void streamCopy(char* dst, const char* src, size_t bytes) {
#if defined(__x86_64__)
  const size_t head = std::min(bytes, (16 - reinterpret_cast<uintptr_t>(dst) % 16) % 16);
  std::memcpy(dst, src, head);
  size_t done = head;
  for (; done + 16 <= bytes; done += 16) {
    __m128i value;
    std::memcpy(&value, src + done, sizeof value);
    _mm_stream_si128(reinterpret_cast<__m128i*>(dst + done), value);
  }
  std::memcpy(dst + done, src + done, bytes - done);
  _mm_sfence();
#else
  std::memcpy(dst, src, bytes);
#endif
}

// Small enough to stay in a core's L2 next to the inputs' lines being read.
constexpr size_t kStreamPieceBytes = 64 * 1024;

}  // namespace

void foldOwnFirstStreaming(AlgoContext& ctx, const std::vector<char*>& dsts,
                           const std::vector<const char*>& sources, size_t count) {
  const size_t typeSize = ctx.typeSize();
  const size_t pieceElems = kStreamPieceBytes / typeSize;
  auto* piece = static_cast<char*>(ctx.scratch(pieceElems * typeSize));
  std::vector<const char*> at(sources.size());
  for (size_t done = 0; done < count; done += pieceElems) {
    const size_t elems = std::min(pieceElems, count - done);
    for (size_t index = 0; index < sources.size(); ++index) {
      at[index] = sources[index] + done * typeSize;
    }
    foldOwnFirst(ctx, piece, at, elems);
    for (char* dst : dsts) streamCopy(dst + done * typeSize, piece, elems * typeSize);
  }
}

}  // namespace weft::shared_buffers
