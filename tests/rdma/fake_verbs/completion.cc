// Completion queues and completion channels: a CQ holds at most the cqe entries it was created
// with (one more overflows it for good, as a real CQ overrun does), and a channel's fd becomes
// readable only when an armed CQ receives a completion.
#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <string>

#include "fake_verbs_internal.h"

namespace weft::fake_verbs {
namespace {

// The channel's eventfd counts 1 while events are pending and 0 otherwise; both changes happen
// under the state lock, so reading it back to 0 never blocks.
void raiseChannel(Channel* channel) {
  const uint64_t one = 1;
  if (write(channel->pub.fd, &one, sizeof(one)) != sizeof(one)) {
    complain("completion channel", "cannot signal the eventfd");
  }
}

void lowerChannel(Channel* channel) {
  uint64_t count = 0;
  if (read(channel->pub.fd, &count, sizeof(count)) != sizeof(count)) {
    complain("completion channel", "cannot clear the eventfd");
  }
}

}  // namespace

void pushCompletion(State& s, Cq* cq, const ibv_wc& wc) {
  if (consumeFault(&s.faults.lostCompletions, ++s.faults.completions)) return;
  if (cq->context->dead || cq->overflowed) return;
  if (cq->entries.size() >= static_cast<size_t>(cq->pub.cqe)) {
    cq->overflowed = true;
    std::fprintf(stderr,
                 "weft_fake_verbs: CQ %p overflowed: a completion arrived while all %d entries "
                 "were full; ibv_poll_cq fails on it from now on\n",
                 static_cast<void*>(&cq->pub), cq->pub.cqe);
    return;
  }
  cq->entries.push_back(wc);
  if (!cq->armed) return;
  cq->armed = false;
  if (Channel* channel = cq->channel) {
    channel->events.push_back(cq);
    if (channel->events.size() == 1) raiseChannel(channel);
  }
}

void removeCompletionsOf(Cq* cq, uint32_t qpNumber) {
  std::erase_if(cq->entries, [qpNumber](const ibv_wc& wc) { return wc.qp_num == qpNumber; });
}

int pollCq(ibv_cq* cq, int numEntries, ibv_wc* wc) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  Cq* fake = findCq(s, cq, "ibv_poll_cq");
  if (!fake || numEntries < 0 || (numEntries > 0 && !wc)) {
    errno = EINVAL;
    return -1;
  }
  if (fake->overflowed) {
    errno = EOVERFLOW;
    return -1;
  }
  if (fake->context->dead) return 0;
  int polled = 0;
  while (polled < numEntries && !fake->entries.empty()) {
    wc[polled++] = fake->entries.front();
    fake->entries.pop_front();
  }
  return polled;
}

// Solicited-only requests are treated as any-completion requests: the fake never marks a
// completion solicited, so this only ever wakes a caller more often.
int reqNotifyCq(ibv_cq* cq, int /*solicitedOnly*/) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  Cq* fake = findCq(s, cq, "ibv_req_notify_cq");
  if (!fake) return EINVAL;
  fake->armed = true;
  return 0;
}

extern "C" {

WEFT_FAKE_VERBS_EXPORT struct ibv_comp_channel* ibv_create_comp_channel(
    struct ibv_context* context) {
  if (!context) {
    errno = EINVAL;
    return nullptr;
  }
  State& s = state();
  std::lock_guard lock(s.mutex);
  Context* fake = findContext(s, context, "ibv_create_comp_channel");
  if (!fake) {
    errno = EINVAL;
    return nullptr;
  }
  const int fd = eventfd(0, EFD_CLOEXEC);
  if (fd < 0) return nullptr;
  auto channel = std::make_unique<Channel>();
  channel->pub.context = context;
  channel->pub.fd = fd;
  channel->pub.refcnt = 0;
  channel->context = fake;
  ++fake->children;
  return &s.channels.add(std::move(channel))->pub;
}

WEFT_FAKE_VERBS_EXPORT int ibv_destroy_comp_channel(struct ibv_comp_channel* channel) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  Channel* fake = findChannel(s, channel, "ibv_destroy_comp_channel");
  if (!fake) return EINVAL;
  if (fake->pub.refcnt > 0) return EBUSY;  // CQs still deliver to it
  close(fake->pub.fd);
  --fake->context->children;
  s.channels.remove(fake);
  return 0;
}

WEFT_FAKE_VERBS_EXPORT struct ibv_cq* ibv_create_cq(struct ibv_context* context, int cqe,
                                                    void* cq_context,
                                                    struct ibv_comp_channel* channel,
                                                    int comp_vector) {
  if (!context) {
    errno = EINVAL;
    return nullptr;
  }
  State& s = state();
  std::lock_guard lock(s.mutex);
  Context* fake = findContext(s, context, "ibv_create_cq");
  if (!fake) {
    errno = EINVAL;
    return nullptr;
  }
  Channel* fakeChannel = nullptr;
  if (channel) {
    fakeChannel = findChannel(s, channel, "ibv_create_cq");
    if (!fakeChannel || fakeChannel->context != fake) {
      errno = EINVAL;
      return nullptr;
    }
  }
  if (cqe < 1 || cqe > kMaxCqe || comp_vector < 0 || comp_vector >= context->num_comp_vectors) {
    errno = EINVAL;
    return nullptr;
  }
  auto cq = std::make_unique<Cq>();
  cq->pub.context = context;
  cq->pub.channel = channel;
  cq->pub.cq_context = cq_context;
  cq->pub.handle = s.nextHandle++;
  // Exactly what was asked for (hardware may round up): a transport must size its CQ itself.
  cq->pub.cqe = cqe;
  pthread_mutex_init(&cq->pub.mutex, nullptr);
  pthread_cond_init(&cq->pub.cond, nullptr);
  cq->context = fake;
  cq->channel = fakeChannel;
  if (fakeChannel) ++fakeChannel->pub.refcnt;
  ++fake->children;
  return &s.cqs.add(std::move(cq))->pub;
}

WEFT_FAKE_VERBS_EXPORT int ibv_destroy_cq(struct ibv_cq* cq) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  Cq* fake = findCq(s, cq, "ibv_destroy_cq");
  if (!fake) return EINVAL;
  if (fake->attachedQps > 0) return EBUSY;
  if (fake->eventsDelivered != fake->eventsAcked) {
    // The real library waits here until the acks match the events, which would hang the test.
    std::string message = std::to_string(fake->eventsDelivered) + " completion events but " +
                          std::to_string(fake->eventsAcked) +
                          " acknowledged (the real library blocks here for good)";
    complain("ibv_destroy_cq", message.c_str());
    return EBUSY;
  }
  if (Channel* channel = fake->channel) {
    const bool wasPending = !channel->events.empty();
    std::erase(channel->events, fake);
    if (wasPending && channel->events.empty()) lowerChannel(channel);
    --channel->pub.refcnt;
  }
  pthread_cond_destroy(&fake->pub.cond);
  pthread_mutex_destroy(&fake->pub.mutex);
  --fake->context->children;
  s.cqs.remove(fake);
  return 0;
}

WEFT_FAKE_VERBS_EXPORT int ibv_get_cq_event(struct ibv_comp_channel* channel, struct ibv_cq** cq,
                                            void** cq_context) {
  State& s = state();
  for (;;) {
    int fd = -1;
    {
      std::lock_guard lock(s.mutex);
      Channel* fake = findChannel(s, channel, "ibv_get_cq_event");
      if (!fake || !cq || !cq_context) {
        errno = EINVAL;
        return -1;
      }
      if (!fake->events.empty()) {
        Cq* ready = fake->events.front();
        fake->events.pop_front();
        if (fake->events.empty()) lowerChannel(fake);
        ++ready->eventsDelivered;
        *cq = &ready->pub;
        *cq_context = ready->pub.cq_context;
        return 0;
      }
      fd = fake->pub.fd;
    }
    // Nothing pending: a non-blocking channel says so, a blocking one waits for the fd.
    const int flags = fcntl(fd, F_GETFL);
    if (flags < 0) return -1;
    if (flags & O_NONBLOCK) {
      errno = EAGAIN;
      return -1;
    }
    pollfd waitFor{fd, POLLIN, 0};
    if (poll(&waitFor, 1, -1) < 0 && errno != EINTR) return -1;
  }
}

WEFT_FAKE_VERBS_EXPORT void ibv_ack_cq_events(struct ibv_cq* cq, unsigned int nevents) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  Cq* fake = findCq(s, cq, "ibv_ack_cq_events");
  if (!fake) return;
  fake->eventsAcked += nevents;
  fake->pub.comp_events_completed += nevents;
}

}  // extern "C"

}  // namespace weft::fake_verbs
