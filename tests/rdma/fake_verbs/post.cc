// ibv_post_send and ibv_post_recv (reached through context->ops, as verbs.h inlines them): check
// each WR as the provider would and queue it; the worker executes it later.
#include <cerrno>
#include <cstring>

#include "fake_verbs_internal.h"

namespace weft::fake_verbs {
namespace {

bool supportedOpcode(ibv_wr_opcode opcode) {
  return opcode == IBV_WR_RDMA_WRITE || opcode == IBV_WR_RDMA_WRITE_WITH_IMM ||
         opcode == IBV_WR_SEND || opcode == IBV_WR_SEND_WITH_IMM;
}

uint64_t totalLength(const ibv_sge* sges, int count) {
  uint64_t total = 0;
  for (int i = 0; i < count; ++i) total += sges[i].length;
  return total;
}

int checkSend(const Qp& qp, const ibv_send_wr& wr) {
  const ibv_qp_state state = qp.attr.qp_state;
  // In ERR the WR is accepted and completes with a flush error, as the specification says.
  if (state != IBV_QPS_RTS && state != IBV_QPS_ERR) return EINVAL;
  if (!supportedOpcode(wr.opcode)) return EINVAL;
  if (wr.num_sge < 0 || static_cast<uint32_t>(wr.num_sge) > qp.init.cap.max_send_sge) {
    return EINVAL;
  }
  if (wr.num_sge > 0 && !wr.sg_list) return EINVAL;
  if ((wr.send_flags & IBV_SEND_INLINE) &&
      totalLength(wr.sg_list, wr.num_sge) > qp.init.cap.max_inline_data) {
    return EINVAL;
  }
  if (qp.sendSlotsUsed >= qp.init.cap.max_send_wr) return ENOMEM;
  return 0;
}

SendWork workFrom(const Qp& qp, const ibv_send_wr& wr) {
  SendWork work;
  work.wrId = wr.wr_id;
  work.opcode = wr.opcode;
  work.signaled = qp.init.sq_sig_all || (wr.send_flags & IBV_SEND_SIGNALED);
  work.isInline = wr.send_flags & IBV_SEND_INLINE;
  if (work.isInline) {
    // The caller may reuse the buffer as soon as this returns; lkeys are not looked at.
    for (int i = 0; i < wr.num_sge; ++i) {
      const auto* bytes = reinterpret_cast<const unsigned char*>(wr.sg_list[i].addr);
      work.inlineData.insert(work.inlineData.end(), bytes, bytes + wr.sg_list[i].length);
    }
  } else {
    work.gather.assign(wr.sg_list, wr.sg_list + wr.num_sge);
  }
  work.remoteAddr = wr.wr.rdma.remote_addr;
  work.rkey = wr.wr.rdma.rkey;
  if (wr.opcode == IBV_WR_RDMA_WRITE_WITH_IMM || wr.opcode == IBV_WR_SEND_WITH_IMM) {
    work.immData = wr.imm_data;
  }
  return work;
}

}  // namespace

int postSend(ibv_qp* qp, ibv_send_wr* wr, ibv_send_wr** badWr) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  Qp* fake = findQp(s, qp, "ibv_post_send");
  if (!fake) {
    if (badWr) *badWr = wr;
    return EINVAL;
  }
  const Clock::time_point now = Clock::now();
  int error = 0;
  for (ibv_send_wr* current = wr; current; current = current->next) {
    error = checkSend(*fake, *current);
    if (error != 0) {
      if (badWr) *badWr = current;  // the WRs before it stay posted
      break;
    }
    SendWork work = workFrom(*fake, *current);
    work.due = now + nextDelayLocked(s);
    fake->sends.push_back(std::move(work));
    ++fake->sendSlotsUsed;
  }
  s.workerWakeup.notify_all();
  return error;
}

int postRecv(ibv_qp* qp, ibv_recv_wr* wr, ibv_recv_wr** badWr) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  Qp* fake = findQp(s, qp, "ibv_post_recv");
  if (!fake) {
    if (badWr) *badWr = wr;
    return EINVAL;
  }
  for (ibv_recv_wr* current = wr; current; current = current->next) {
    int error = 0;
    if (fake->attr.qp_state == IBV_QPS_RESET) {
      error = EINVAL;
    } else if (current->num_sge < 0 ||
               static_cast<uint32_t>(current->num_sge) > fake->init.cap.max_recv_sge ||
               (current->num_sge > 0 && !current->sg_list)) {
      error = EINVAL;
    } else if (fake->recvs.size() >= fake->init.cap.max_recv_wr) {
      error = ENOMEM;
    }
    if (error != 0) {
      if (badWr) *badWr = current;
      return error;
    }
    if (fake->attr.qp_state == IBV_QPS_ERR) {
      ibv_wc wc{};
      wc.wr_id = current->wr_id;
      wc.status = IBV_WC_WR_FLUSH_ERR;
      wc.opcode = IBV_WC_RECV;
      wc.qp_num = fake->pub.qp_num;
      pushCompletion(s, fake->recvCq, wc);
      continue;
    }
    RecvWork recv;
    recv.wrId = current->wr_id;
    recv.scatter.assign(current->sg_list, current->sg_list + current->num_sge);
    fake->recvs.push_back(std::move(recv));
  }
  return 0;
}

}  // namespace weft::fake_verbs
