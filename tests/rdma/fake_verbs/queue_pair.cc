// RC queue pairs: creation against the device limits, and the state machine of the verbs
// specification (RESET, INIT, RTR, RTS, ERR) with the mandatory and optional attributes of each
// transition, refusing missing or extra ones with EINVAL as the kernel does.
#include <cerrno>

#include "fake_verbs_internal.h"

namespace weft::fake_verbs {
namespace {

constexpr unsigned kQpAccessFlags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                                    IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;

struct TransitionRule {
  int required = 0;
  int optional = 0;
};

std::optional<TransitionRule> ruleFor(ibv_qp_state from, ibv_qp_state to) {
  if (to == IBV_QPS_RESET || to == IBV_QPS_ERR) return TransitionRule{};
  if (from == IBV_QPS_RESET && to == IBV_QPS_INIT) {
    return TransitionRule{IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS, 0};
  }
  if (from == IBV_QPS_INIT && to == IBV_QPS_INIT) {
    return TransitionRule{0, IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS};
  }
  if (from == IBV_QPS_INIT && to == IBV_QPS_RTR) {
    return TransitionRule{IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                              IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER,
                          IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX};
  }
  if (from == IBV_QPS_RTR && to == IBV_QPS_RTS) {
    return TransitionRule{IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                              IBV_QP_MAX_QP_RD_ATOMIC,
                          IBV_QP_CUR_STATE | IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS |
                              IBV_QP_MIN_RNR_TIMER | IBV_QP_PATH_MIG_STATE};
  }
  if (from == IBV_QPS_RTS && to == IBV_QPS_RTS) {
    return TransitionRule{0, IBV_QP_CUR_STATE | IBV_QP_ACCESS_FLAGS | IBV_QP_ALT_PATH |
                                 IBV_QP_PATH_MIG_STATE | IBV_QP_MIN_RNR_TIMER};
  }
  return std::nullopt;
}

// The address vector must name our port, and on Ethernet (RoCE) carry a GRH whose source GID
// index points at a populated entry: the kernel refuses the modify otherwise.
bool validAddress(const PortConfig& port, const ibv_ah_attr& ah) {
  if (ah.port_num != kPortNumber) return false;
  if (!ah.is_global) return port.linkLayer == IBV_LINK_LAYER_INFINIBAND;
  return ah.grh.sgid_index < kGidTableLength && port.gids[ah.grh.sgid_index].valid;
}

bool validValues(const Qp& qp, const ibv_qp_attr& attr, int mask) {
  const PortConfig& port = qp.context->port;
  if ((mask & IBV_QP_PKEY_INDEX) && attr.pkey_index >= port.pkeyTableLength) return false;
  if ((mask & IBV_QP_PORT) && attr.port_num != kPortNumber) return false;
  if ((mask & IBV_QP_ACCESS_FLAGS) && (attr.qp_access_flags & ~kQpAccessFlags)) return false;
  // The port's active MTU is 1024; a bigger path MTU is refused as on real ports.
  if ((mask & IBV_QP_PATH_MTU) && (attr.path_mtu < IBV_MTU_256 || attr.path_mtu > IBV_MTU_1024)) {
    return false;
  }
  if ((mask & IBV_QP_AV) && !validAddress(port, attr.ah_attr)) return false;
  if ((mask & IBV_QP_DEST_QPN) && attr.dest_qp_num > kQpNumberMask) return false;
  if ((mask & IBV_QP_MAX_DEST_RD_ATOMIC) && attr.max_dest_rd_atomic > kMaxRdAtomic) return false;
  if ((mask & IBV_QP_MAX_QP_RD_ATOMIC) && attr.max_rd_atomic > kMaxRdAtomic) return false;
  if ((mask & IBV_QP_MIN_RNR_TIMER) && attr.min_rnr_timer > 31) return false;
  if ((mask & IBV_QP_TIMEOUT) && attr.timeout > 31) return false;
  if ((mask & IBV_QP_RETRY_CNT) && attr.retry_cnt > 7) return false;
  if ((mask & IBV_QP_RNR_RETRY) && attr.rnr_retry > 7) return false;
  if ((mask & IBV_QP_PATH_MIG_STATE) && attr.path_mig_state > IBV_MIG_ARMED) return false;
  return true;
}

void applyValues(Qp* qp, const ibv_qp_attr& attr, int mask) {
  ibv_qp_attr& current = qp->attr;
  if (mask & IBV_QP_PKEY_INDEX) current.pkey_index = attr.pkey_index;
  if (mask & IBV_QP_PORT) current.port_num = attr.port_num;
  if (mask & IBV_QP_ACCESS_FLAGS) current.qp_access_flags = attr.qp_access_flags;
  if (mask & IBV_QP_PATH_MTU) current.path_mtu = attr.path_mtu;
  if (mask & IBV_QP_AV) current.ah_attr = attr.ah_attr;
  if (mask & IBV_QP_DEST_QPN) current.dest_qp_num = attr.dest_qp_num;
  if (mask & IBV_QP_RQ_PSN) current.rq_psn = attr.rq_psn & kPsnMask;
  if (mask & IBV_QP_SQ_PSN) current.sq_psn = attr.sq_psn & kPsnMask;
  if (mask & IBV_QP_MAX_DEST_RD_ATOMIC) current.max_dest_rd_atomic = attr.max_dest_rd_atomic;
  if (mask & IBV_QP_MAX_QP_RD_ATOMIC) current.max_rd_atomic = attr.max_rd_atomic;
  if (mask & IBV_QP_MIN_RNR_TIMER) current.min_rnr_timer = attr.min_rnr_timer;
  if (mask & IBV_QP_TIMEOUT) current.timeout = attr.timeout;
  if (mask & IBV_QP_RETRY_CNT) current.retry_cnt = attr.retry_cnt;
  if (mask & IBV_QP_RNR_RETRY) current.rnr_retry = attr.rnr_retry;
  if (mask & IBV_QP_PATH_MIG_STATE) current.path_mig_state = attr.path_mig_state;
  if (mask & IBV_QP_ALT_PATH) {
    current.alt_ah_attr = attr.alt_ah_attr;
    current.alt_pkey_index = attr.alt_pkey_index;
    current.alt_port_num = attr.alt_port_num;
    current.alt_timeout = attr.alt_timeout;
  }
}

void setState(Qp* qp, ibv_qp_state next) {
  qp->attr.qp_state = next;
  qp->attr.cur_qp_state = next;
  qp->pub.state = next;
}

// RESET forgets the queues, the attributes and, as mlx5 does, the QP's unpolled completions.
void resetQp(Qp* qp) {
  qp->sends.clear();
  qp->recvs.clear();
  qp->sendSlotsUsed = 0;
  qp->unsignaledDone = 0;
  removeCompletionsOf(qp->sendCq, qp->pub.qp_num);
  removeCompletionsOf(qp->recvCq, qp->pub.qp_num);
  qp->attr = ibv_qp_attr{};
  qp->attr.cap = qp->init.cap;
}

Cq* findQpCq(State& s, ibv_cq* cq, const Context* context) {
  if (!cq) return nullptr;
  touch(cq);
  Cq* found = s.cqs.find(cq);
  return found && found->context == context ? found : nullptr;
}

bool capsWithinLimits(const ibv_qp_cap& cap) {
  return cap.max_send_wr <= kMaxQpWr && cap.max_recv_wr <= kMaxQpWr &&
         cap.max_send_sge <= kMaxSge && cap.max_recv_sge <= kMaxSge &&
         cap.max_inline_data <= kMaxInlineData;
}

int modifyQpLocked(State& s, Qp* qp, const ibv_qp_attr& attr, int mask) {
  const ibv_qp_state current = qp->attr.qp_state;
  const ibv_qp_state next = (mask & IBV_QP_STATE) ? attr.qp_state : current;
  if (next == IBV_QPS_SQD || next == IBV_QPS_SQE || next > IBV_QPS_ERR) return EINVAL;
  std::optional<TransitionRule> rule = ruleFor(current, next);
  if (!rule) return EINVAL;
  const int attributes = mask & ~IBV_QP_STATE;
  if ((attributes & rule->required) != rule->required) return EINVAL;
  if (attributes & ~(rule->required | rule->optional)) return EINVAL;
  if ((attributes & IBV_QP_CUR_STATE) && attr.cur_qp_state != current) return EINVAL;
  if (!validValues(*qp, attr, attributes)) return EINVAL;

  if (next == IBV_QPS_RESET) {
    resetQp(qp);
    setState(qp, IBV_QPS_RESET);
    return 0;
  }
  if (next == IBV_QPS_ERR) {
    moveToError(s, qp);
    return 0;
  }
  applyValues(qp, attr, attributes);
  if (current == IBV_QPS_INIT && next == IBV_QPS_RTR) qp->expectedPsn = qp->attr.rq_psn;
  if (current == IBV_QPS_RTR && next == IBV_QPS_RTS) qp->sendPsn = qp->attr.sq_psn;
  setState(qp, next);
  s.workerWakeup.notify_all();  // a requester waiting on this responder may now get through
  return 0;
}

}  // namespace

void moveToError(State& s, Qp* qp) {
  if (qp->attr.qp_state == IBV_QPS_ERR) return;
  setState(qp, IBV_QPS_ERR);
  for (const RecvWork& recv : qp->recvs) {
    ibv_wc wc{};
    wc.wr_id = recv.wrId;
    wc.status = IBV_WC_WR_FLUSH_ERR;
    wc.opcode = IBV_WC_RECV;
    wc.qp_num = qp->pub.qp_num;
    pushCompletion(s, qp->recvCq, wc);
  }
  qp->recvs.clear();
  s.workerWakeup.notify_all();  // the worker flushes the send queue
}

extern "C" {

WEFT_FAKE_VERBS_EXPORT struct ibv_qp* ibv_create_qp(struct ibv_pd* pd,
                                                    struct ibv_qp_init_attr* qp_init_attr) {
  if (!pd) {
    errno = EINVAL;
    return nullptr;
  }
  State& s = state();
  std::lock_guard lock(s.mutex);
  Pd* fakePd = findPd(s, pd, "ibv_create_qp");
  if (!fakePd || !qp_init_attr) {
    errno = EINVAL;
    return nullptr;
  }
  if (consumeFault(&s.faults.failedCreateQps, ++s.faults.createQpCalls)) {
    errno = ENOMEM;
    return nullptr;
  }
  if (qp_init_attr->qp_type != IBV_QPT_RC || qp_init_attr->srq) {
    errno = EOPNOTSUPP;  // only RC, and no shared receive queues
    return nullptr;
  }
  Cq* sendCq = findQpCq(s, qp_init_attr->send_cq, fakePd->context);
  Cq* recvCq = findQpCq(s, qp_init_attr->recv_cq, fakePd->context);
  if (!sendCq || !recvCq || !capsWithinLimits(qp_init_attr->cap)) {
    errno = EINVAL;
    return nullptr;
  }
  auto qp = std::make_unique<Qp>();
  ibv_qp& pub = qp->pub;
  pub.context = pd->context;
  pub.qp_context = qp_init_attr->qp_context;
  pub.pd = pd;
  pub.send_cq = qp_init_attr->send_cq;
  pub.recv_cq = qp_init_attr->recv_cq;
  pub.handle = s.nextHandle++;
  pub.qp_num = s.nextQpNumber++ & kQpNumberMask;
  pub.state = IBV_QPS_RESET;
  pub.qp_type = IBV_QPT_RC;
  pthread_mutex_init(&pub.mutex, nullptr);
  pthread_cond_init(&pub.cond, nullptr);
  qp->pd = fakePd;
  qp->context = fakePd->context;
  qp->sendCq = sendCq;
  qp->recvCq = recvCq;
  qp->init = *qp_init_attr;  // the caps granted are the caps asked for
  qp->attr.cap = qp_init_attr->cap;
  ++sendCq->attachedQps;
  ++recvCq->attachedQps;
  ++fakePd->qps;
  Qp* added = s.qps.add(std::move(qp));
  s.qpsByNumber.emplace(added->pub.qp_num, added);
  return &added->pub;
}

WEFT_FAKE_VERBS_EXPORT int ibv_modify_qp(struct ibv_qp* qp, struct ibv_qp_attr* attr,
                                         int attr_mask) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  Qp* fake = findQp(s, qp, "ibv_modify_qp");
  if (!fake || !attr) return EINVAL;
  return modifyQpLocked(s, fake, *attr, attr_mask);
}

WEFT_FAKE_VERBS_EXPORT int ibv_query_qp(struct ibv_qp* qp, struct ibv_qp_attr* attr,
                                        int /*attr_mask*/, struct ibv_qp_init_attr* init_attr) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  Qp* fake = findQp(s, qp, "ibv_query_qp");
  if (!fake || !attr || !init_attr) return EINVAL;
  // Like the hardware, report everything whatever the mask asks for.
  *attr = fake->attr;
  attr->cur_qp_state = fake->attr.qp_state;
  attr->cap = fake->init.cap;
  *init_attr = fake->init;
  fake->pub.state = fake->attr.qp_state;
  return 0;
}

WEFT_FAKE_VERBS_EXPORT int ibv_destroy_qp(struct ibv_qp* qp) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  Qp* fake = findQp(s, qp, "ibv_destroy_qp");
  if (!fake) return EINVAL;
  // Unposted work is discarded and, as mlx5 does, the QP's unpolled completions with it.
  removeCompletionsOf(fake->sendCq, fake->pub.qp_num);
  removeCompletionsOf(fake->recvCq, fake->pub.qp_num);
  --fake->sendCq->attachedQps;
  --fake->recvCq->attachedQps;
  --fake->pd->qps;
  s.qpsByNumber.erase(fake->pub.qp_num);
  pthread_cond_destroy(&fake->pub.cond);
  pthread_mutex_destroy(&fake->pub.mutex);
  s.qps.remove(fake);
  return 0;
}

}  // extern "C"

}  // namespace weft::fake_verbs
