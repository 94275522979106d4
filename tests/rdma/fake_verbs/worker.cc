// The background worker: the fake's "HCA". It executes each QP's send queue in posting order
// once a WR is due, moves the bytes, and generates the completions on both sides, with the
// checks and the failure modes of an RC connection (protection errors, RNR, retry exceeded).
#include <algorithm>
#include <cstring>

#include "fake_verbs_internal.h"

namespace weft::fake_verbs {
namespace {

using std::chrono::microseconds;
using std::chrono::nanoseconds;

constexpr Clock::duration kRetryBudgetCap = std::chrono::seconds(2);
constexpr int kDefaultJitterMicros = 20;
constexpr uint8_t kInfiniteRnrRetry = 7;
constexpr uint32_t kErrorVendorCode = 0x81;

// The RNR NAK timer encodings of the InfiniBand specification, in units of 10 microseconds
// (0 is the longest, 655.36 ms).
constexpr std::array<uint32_t, 32> kRnrTimerTensOfMicros = {
    65536, 1,    2,    3,    4,    6,     8,     12,    16,    24,   32,
    48,    64,   96,   128,  192,  256,   384,   512,   768,   1024, 1536,
    2048,  3072, 4096, 6144, 8192, 12288, 16384, 24576, 32768, 49152};

enum class Outcome { kDone, kRetryLater };

// Local ACK timeout 4.096 us * 2^timeout per attempt, retry_cnt + 1 attempts, the whole capped
// at 2 s so that tests of a dead peer finish. Timeout 0 ("infinite") gets the cap.
Clock::duration retryBudget(const Qp& qp) {
  if (qp.attr.timeout == 0) return kRetryBudgetCap;
  const nanoseconds perAttempt(int64_t{4096} << qp.attr.timeout);
  return std::min<Clock::duration>(perAttempt * (qp.attr.retry_cnt + 1), kRetryBudgetCap);
}

Clock::duration retryInterval(const Qp& qp) {
  return retryBudget(qp) / (qp.attr.retry_cnt + 1);
}

Clock::duration rnrDelay(const Qp& responder) {
  return microseconds(10 * kRnrTimerTensOfMicros[responder.attr.min_rnr_timer & 31]);
}

uint32_t packetsFor(uint64_t length, ibv_mtu pathMtu) {
  const uint64_t mtuBytes = uint64_t{128} << pathMtu;
  return static_cast<uint32_t>(std::max<uint64_t>(1, (length + mtuBytes - 1) / mtuBytes));
}

bool isWrite(ibv_wr_opcode opcode) {
  return opcode == IBV_WR_RDMA_WRITE || opcode == IBV_WR_RDMA_WRITE_WITH_IMM;
}

bool carriesImmediate(ibv_wr_opcode opcode) {
  return opcode == IBV_WR_RDMA_WRITE_WITH_IMM || opcode == IBV_WR_SEND_WITH_IMM;
}

bool covers(const Mr& mr, uint64_t addr, uint64_t length) {
  const uint64_t begin = reinterpret_cast<uintptr_t>(mr.pub.addr);
  const uint64_t end = begin + mr.pub.length;
  return addr >= begin && addr <= end && length <= end - addr;
}

Mr* findKey(const std::unordered_map<uint32_t, Mr*>& keys, uint32_t key) {
  auto it = keys.find(key);
  return it == keys.end() ? nullptr : it->second;
}

uint64_t messageLength(const SendWork& work) {
  if (work.isInline) return work.inlineData.size();
  uint64_t total = 0;
  for (const ibv_sge& sge : work.gather) total += sge.length;
  return total;
}

bool gatherIsValid(const State& s, const Qp& qp, const SendWork& work) {
  if (work.isInline) return true;
  for (const ibv_sge& sge : work.gather) {
    if (sge.length == 0) continue;
    const Mr* mr = findKey(s.mrsByLkey, sge.lkey);
    if (!mr || mr->pd != qp.pd || !covers(*mr, sge.addr, sge.length)) return false;
  }
  return true;
}

// Read at execution, not at post (inline data aside): a buffer changed before the completion
// changes what arrives, as with a real DMA engine.
std::vector<unsigned char> gatherMessage(const SendWork& work) {
  if (work.isInline) return work.inlineData;
  std::vector<unsigned char> message;
  for (const ibv_sge& sge : work.gather) {
    const auto* bytes = reinterpret_cast<const unsigned char*>(sge.addr);
    message.insert(message.end(), bytes, bytes + sge.length);
  }
  return message;
}

bool portActive(const Context& context) {
  return context.port.state == IBV_PORT_ACTIVE;
}

bool addressReaches(const ibv_ah_attr& ah, const Context& responder) {
  if (ah.is_global) {
    return std::any_of(responder.port.gids.begin(), responder.port.gids.end(),
                       [&ah](const GidSlot& slot) {
                         return slot.valid && std::memcmp(slot.gid.raw, ah.grh.dgid.raw, 16) == 0;
                       });
  }
  return responder.port.linkLayer == IBV_LINK_LAYER_INFINIBAND && ah.dlid == responder.port.lid;
}

// The QP that answers this requester, or null when its packets go nowhere: no such QP, a dead
// context, a port down, a responder not yet (or no longer) in RTR/RTS, one connected to another
// QP (its ACKs go there), an address that is not the responder's, or PSNs that do not line up.
Qp* reachableResponder(const State& s, const Qp& requester) {
  auto it = s.qpsByNumber.find(requester.attr.dest_qp_num);
  if (it == s.qpsByNumber.end()) return nullptr;
  Qp* responder = it->second;
  const ibv_qp_state state = responder->attr.qp_state;
  if (responder->context->dead || !portActive(*requester.context) ||
      !portActive(*responder->context) || (state != IBV_QPS_RTR && state != IBV_QPS_RTS) ||
      responder->attr.dest_qp_num != requester.pub.qp_num ||
      !addressReaches(requester.attr.ah_attr, *responder->context) ||
      requester.sendPsn != responder->expectedPsn) {
    return nullptr;
  }
  return responder;
}

bool remoteWritable(const State& s, const Qp& responder, const SendWork& work, uint64_t length) {
  if (!(responder.attr.qp_access_flags & IBV_ACCESS_REMOTE_WRITE)) return false;
  const Mr* mr = findKey(s.mrsByRkey, work.rkey);
  return mr && mr->pd == responder.pd && (mr->access & IBV_ACCESS_REMOTE_WRITE) &&
         covers(*mr, work.remoteAddr, length);
}

ibv_wc_status checkScatter(const State& s, const Qp& responder, const RecvWork& recv,
                           uint64_t length) {
  uint64_t capacity = 0;
  for (const ibv_sge& sge : recv.scatter) {
    if (sge.length == 0) continue;
    const Mr* mr = findKey(s.mrsByLkey, sge.lkey);
    if (!mr || mr->pd != responder.pd || !(mr->access & IBV_ACCESS_LOCAL_WRITE) ||
        !covers(*mr, sge.addr, sge.length)) {
      return IBV_WC_LOC_PROT_ERR;
    }
    capacity += sge.length;
  }
  return capacity < length ? IBV_WC_LOC_LEN_ERR : IBV_WC_SUCCESS;
}

void scatter(const std::vector<unsigned char>& message, const RecvWork& recv) {
  size_t offset = 0;
  for (const ibv_sge& sge : recv.scatter) {
    if (offset == message.size()) break;
    const size_t piece = std::min<size_t>(sge.length, message.size() - offset);
    std::memmove(reinterpret_cast<void*>(sge.addr), message.data() + offset, piece);
    offset += piece;
  }
}

// A WR leaves the send queue. Errors are always reported; a successful unsignaled WR keeps its
// slot until the next reported completion on the QP retires it with itself.
void retireSend(State& s, Qp* qp, const SendWork& work, ibv_wc_status status) {
  if (work.signaled || status != IBV_WC_SUCCESS) {
    qp->sendSlotsUsed -= 1 + qp->unsignaledDone;
    qp->unsignaledDone = 0;
    ibv_wc wc{};
    wc.wr_id = work.wrId;
    wc.status = status;
    wc.opcode = isWrite(work.opcode) ? IBV_WC_RDMA_WRITE : IBV_WC_SEND;
    wc.vendor_err = status == IBV_WC_SUCCESS ? 0 : kErrorVendorCode;
    wc.qp_num = qp->pub.qp_num;
    pushCompletion(s, qp->sendCq, wc);
  } else {
    ++qp->unsignaledDone;
  }
}

void failSend(State& s, Qp* qp, const SendWork& work, ibv_wc_status status) {
  retireSend(s, qp, work, status);
  moveToError(s, qp);
}

void completeReceive(State& s, Qp* responder, const Qp& requester, const SendWork& work,
                     ibv_wc_status status, uint64_t length) {
  ibv_wc wc{};
  wc.wr_id = responder->recvs.front().wrId;
  responder->recvs.pop_front();
  wc.status = status;
  wc.opcode = isWrite(work.opcode) ? IBV_WC_RECV_RDMA_WITH_IMM : IBV_WC_RECV;
  wc.qp_num = responder->pub.qp_num;
  if (status == IBV_WC_SUCCESS) {
    wc.byte_len = static_cast<uint32_t>(length);
    wc.src_qp = requester.pub.qp_num;
    if (carriesImmediate(work.opcode)) {
      wc.wc_flags = IBV_WC_WITH_IMM;
      wc.imm_data = work.immData;
    }
  } else {
    wc.vendor_err = kErrorVendorCode;
  }
  pushCompletion(s, responder->recvCq, wc);
}

Outcome execute(State& s, Qp* qp, SendWork& work, Clock::time_point now) {
  if (qp->attr.qp_state == IBV_QPS_ERR) {
    retireSend(s, qp, work, IBV_WC_WR_FLUSH_ERR);
    return Outcome::kDone;
  }
  if (!gatherIsValid(s, *qp, work)) {
    failSend(s, qp, work, IBV_WC_LOC_PROT_ERR);
    return Outcome::kDone;
  }
  Qp* responder = reachableResponder(s, *qp);
  if (!responder) {
    // Unanswered packets: retransmit every ACK timeout until the retry budget is spent.
    if (!work.giveUpAt) work.giveUpAt = now + retryBudget(*qp);
    if (now >= *work.giveUpAt) {
      failSend(s, qp, work, IBV_WC_RETRY_EXC_ERR);
      return Outcome::kDone;
    }
    work.due = std::min(now + retryInterval(*qp), *work.giveUpAt);
    return Outcome::kRetryLater;
  }
  work.giveUpAt.reset();
  const uint64_t length = messageLength(work);
  // A zero-length write touches no memory, so its rkey is never looked at.
  if (isWrite(work.opcode) && length > 0 && !remoteWritable(s, *responder, work, length)) {
    failSend(s, qp, work, IBV_WC_REM_ACCESS_ERR);
    moveToError(s, responder);  // the responder's QP fails on the access violation too
    return Outcome::kDone;
  }
  const bool consumesReceive = work.opcode != IBV_WR_RDMA_WRITE;
  if (consumesReceive) {
    if (responder->recvs.empty()) {
      // Receiver not ready: retry after the responder's RNR timer, rnr_retry times (7: forever).
      if (qp->attr.rnr_retry != kInfiniteRnrRetry && work.rnrRetriesUsed >= qp->attr.rnr_retry) {
        failSend(s, qp, work, IBV_WC_RNR_RETRY_EXC_ERR);
        return Outcome::kDone;
      }
      ++work.rnrRetriesUsed;
      work.due = now + rnrDelay(*responder);
      return Outcome::kRetryLater;
    }
    if (!isWrite(work.opcode)) {
      const ibv_wc_status status = checkScatter(s, *responder, responder->recvs.front(), length);
      if (status != IBV_WC_SUCCESS) {
        completeReceive(s, responder, *qp, work, status, length);
        moveToError(s, responder);
        failSend(s, qp, work,
                 status == IBV_WC_LOC_LEN_ERR ? IBV_WC_REM_INV_REQ_ERR : IBV_WC_REM_OP_ERR);
        return Outcome::kDone;
      }
    }
  }
  const std::vector<unsigned char> message = gatherMessage(work);
  if (isWrite(work.opcode)) {
    if (length > 0) std::memmove(reinterpret_cast<void*>(work.remoteAddr), message.data(), length);
  } else {
    scatter(message, responder->recvs.front());
  }
  const uint32_t packets = packetsFor(length, qp->attr.path_mtu);
  qp->sendPsn = (qp->sendPsn + packets) & kPsnMask;
  responder->expectedPsn = (responder->expectedPsn + packets) & kPsnMask;
  // The data is in place before the receive completion exists, as RC guarantees.
  if (consumesReceive) completeReceive(s, responder, *qp, work, IBV_WC_SUCCESS, length);
  retireSend(s, qp, work, IBV_WC_SUCCESS);
  return Outcome::kDone;
}

void executeDueWorkLocked(State& s, Clock::time_point now, Clock::time_point* nextDue) {
  for (auto& [number, qp] : s.qpsByNumber) {
    // A dead context's own work never completes.
    if (qp->context->dead) continue;
    while (!qp->sends.empty()) {
      SendWork& head = qp->sends.front();
      // RC executes in posting order: nothing overtakes a head that waits (delay, RNR, retry).
      if (head.due > now || execute(s, qp, head, now) == Outcome::kRetryLater) {
        *nextDue = std::min(*nextDue, head.due);
        break;
      }
      qp->sends.pop_front();
    }
  }
}

void workerLoop(uint64_t generation) {
  State& s = state();
  std::unique_lock lock(s.mutex);
  while (s.workerGeneration == generation) {
    Clock::time_point nextDue = Clock::time_point::max();
    executeDueWorkLocked(s, Clock::now(), &nextDue);
    if (nextDue == Clock::time_point::max()) {
      s.workerWakeup.wait(lock);
    } else {
      s.workerWakeup.wait_until(lock, nextDue);
    }
  }
}

}  // namespace

Clock::duration nextDelayLocked(State& s) {
  if (s.faults.delay) return *s.faults.delay;
  if (s.environmentDelay) return *s.environmentDelay;
  std::uniform_int_distribution<int> jitter(0, kDefaultJitterMicros);
  return microseconds(jitter(s.jitter));
}

void startWorkerLocked(State& s) {
  // The previous worker, if any, was handed to the closer that stopped it, who joins it.
  s.worker = std::thread(workerLoop, ++s.workerGeneration);
}

std::thread stopWorkerIfIdleLocked(State& s) {
  if (s.openContexts > 0) return {};
  ++s.workerGeneration;
  s.workerWakeup.notify_all();
  return std::move(s.worker);
}

}  // namespace weft::fake_verbs
