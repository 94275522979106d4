// Internal state of the fake libibverbs: the objects behind the public verbs structs, the one
// lock that guards all of them, and the helpers that the entry points share.
//
// Every public struct the caller sees (ibv_context, ibv_qp, ...) is the `pub` member of a fake
// object owned by a registry in State; the registries map the public pointer back to its object,
// so a pointer the fake never handed out (or already freed) is recognised and refused.
#pragma once

#include <infiniband/verbs.h>

#include <array>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

// Only the verbs entry points and the two control functions leave the library; the build hides
// everything else. Their definitions sit inside namespace weft::fake_verbs, in extern "C"
// blocks: a C-linkage function is the same function in whichever namespace it is declared, so
// they define the global ones of verbs.h while seeing this namespace's helpers unqualified.
#define WEFT_FAKE_VERBS_EXPORT __attribute__((visibility("default")))

namespace weft::fake_verbs {

using Clock = std::chrono::steady_clock;

// Device limits, reported by ibv_query_device and enforced where the real hardware enforces them.
constexpr int kGidTableLength = 4;
constexpr uint32_t kMaxQpWr = 4096;
constexpr int kMaxCqe = 65535;
constexpr uint32_t kMaxSge = 4;
constexpr uint32_t kMaxInlineData = 256;
constexpr uint8_t kMaxRdAtomic = 16;
constexpr int kCompVectors = 4;
constexpr uint32_t kPsnMask = 0xffffff;
constexpr uint32_t kQpNumberMask = 0xffffff;
constexpr uint8_t kPortNumber = 1;

struct GidSlot {
  ibv_gid gid{};
  ibv_gid_type type = IBV_GID_TYPE_IB;
  bool valid = false;
};

// What ibv_query_port and the GID queries report; captured from the environment at open.
struct PortConfig {
  ibv_port_state state = IBV_PORT_ACTIVE;
  uint8_t linkLayer = IBV_LINK_LAYER_ETHERNET;
  uint16_t lid = 0;
  uint16_t pkeyTableLength = 1;
  std::array<GidSlot, kGidTableLength> gids{};
};

struct Device {
  ibv_device pub{};
  int index = 0;       // position in WEFT_FAKE_VERBS_DEVICES: seeds GUIDs, LIDs and GIDs
  int references = 0;  // the device lists and the contexts that still point at it
};

struct Context {
  ibv_context pub{};
  Device* device = nullptr;
  PortConfig port;
  uint64_t openIndex = 0;  // open order since load or `reset`, the index kill_context names
  uint64_t openEpoch = 0;  // State::resets at open, so that indexes from before a reset differ
  bool dead = false;
  int children = 0;  // PDs, CQs and completion channels; close refuses while any is left
};

struct Pd {
  ibv_pd pub{};
  Context* context = nullptr;
  int mrs = 0;
  int qps = 0;
};

struct Mr {
  ibv_mr pub{};
  Pd* pd = nullptr;
  unsigned access = 0;
};

struct Cq;

struct Channel {
  ibv_comp_channel pub{};
  Context* context = nullptr;
  // CQs with an undelivered event, in arrival order. The eventfd in pub.fd reads 1 while this
  // is not empty and 0 otherwise, so poll(2) on it says whether ibv_get_cq_event would block.
  std::deque<Cq*> events;
};

struct Cq {
  ibv_cq pub{};
  Context* context = nullptr;
  Channel* channel = nullptr;
  std::deque<ibv_wc> entries;
  bool armed = false;
  bool overflowed = false;
  int attachedQps = 0;
  uint64_t eventsDelivered = 0;
  uint64_t eventsAcked = 0;
};

struct SendWork {
  uint64_t wrId = 0;
  ibv_wr_opcode opcode = IBV_WR_RDMA_WRITE;
  bool signaled = false;
  bool isInline = false;
  std::vector<ibv_sge> gather;            // read at execution, as a DMA engine would
  std::vector<unsigned char> inlineData;  // captured at post time
  uint64_t remoteAddr = 0;
  uint32_t rkey = 0;
  uint32_t immData = 0;  // network byte order, passed through untouched
  Clock::time_point due;
  int rnrRetriesUsed = 0;
  std::optional<Clock::time_point> giveUpAt;  // set while the responder does not answer
};

struct RecvWork {
  uint64_t wrId = 0;
  std::vector<ibv_sge> scatter;
};

struct Qp {
  ibv_qp pub{};
  Pd* pd = nullptr;
  Context* context = nullptr;
  Cq* sendCq = nullptr;
  Cq* recvCq = nullptr;
  ibv_qp_init_attr init{};   // as created, with the capabilities granted
  ibv_qp_attr attr{};        // current attributes, as ibv_query_qp reports them
  uint32_t sendPsn = 0;      // PSN of the next request packet
  uint32_t expectedPsn = 0;  // PSN the responder side expects next
  std::deque<SendWork> sends;
  std::deque<RecvWork> recvs;
  // Send queue slots: a WR holds one from post until a completion retires it. An unsignaled
  // WR that finished still holds its slot until a later signaled completion on the QP.
  uint32_t sendSlotsUsed = 0;
  uint32_t unsignaledDone = 0;
};

template <typename Public, typename Object>
class Registry {
 public:
  Object* add(std::unique_ptr<Object> object) {
    Object* raw = object.get();
    objects_.emplace(&raw->pub, std::move(object));
    return raw;
  }
  Object* find(const Public* pub) const {
    auto it = objects_.find(pub);
    return it == objects_.end() ? nullptr : it->second.get();
  }
  void remove(const Object* object) { objects_.erase(&object->pub); }
  size_t size() const { return objects_.size(); }
  template <typename Visit>
  void forEach(Visit visit) const {
    for (const auto& [pub, object] : objects_) visit(object.get());
  }

 private:
  std::unordered_map<const Public*, std::unique_ptr<Object>> objects_;
};

// Armed faults, as ordinals of the counted event that they hit (the N-th next from when the
// command arrived), so that several of one kind can be pending at once.
struct Faults {
  std::vector<uint64_t> lostCompletions;
  std::vector<uint64_t> failedRegMrs;
  std::vector<uint64_t> failedCreateQps;
  std::vector<uint64_t> killedContexts;  // open indexes
  std::optional<Clock::duration> delay;  // from `delay_us`; wins over the environment
  uint64_t completions = 0;
  uint64_t regMrCalls = 0;
  uint64_t createQpCalls = 0;
  uint64_t contextsOpened = 0;
  bool environmentRead = false;  // WEFT_FAKE_VERBS_FAULTS, read at the first open
};

struct State {
  std::mutex mutex;
  std::condition_variable workerWakeup;

  Registry<ibv_device, Device> devices;
  std::unordered_map<ibv_device**, std::vector<Device*>> deviceLists;
  Registry<ibv_context, Context> contexts;
  Registry<ibv_pd, Pd> pds;
  Registry<ibv_mr, Mr> mrs;
  Registry<ibv_comp_channel, Channel> channels;
  Registry<ibv_cq, Cq> cqs;
  Registry<ibv_qp, Qp> qps;

  // The "fabric": responders are found by QP number, memory by key. Ordered so that the worker
  // visits QPs in a stable order.
  std::map<uint32_t, Qp*> qpsByNumber;
  std::unordered_map<uint32_t, Mr*> mrsByLkey;
  std::unordered_map<uint32_t, Mr*> mrsByRkey;
  uint32_t nextQpNumber = 0x000107;
  uint32_t nextKeyIndex = 1;
  uint32_t nextHandle = 1;

  Faults faults;
  uint64_t resets = 0;
  std::optional<Clock::duration> environmentDelay;  // WEFT_FAKE_VERBS_DELAY_US at the last open
  std::minstd_rand jitter{20240601};

  int openContexts = 0;
  std::thread worker;
  uint64_t workerGeneration = 0;  // a worker runs while this still equals the value it started
};

// The process-wide state. Never destroyed, so that a worker still running at exit, or objects
// the caller never freed, do not meet destroyed members.
State& state();

// The real library dereferences the objects it is handed; reading one byte here does the same,
// so that ASan reports a freed object at the call where the registry alone would only refuse it.
template <typename T>
void touch(const T* object) {
  (void)*reinterpret_cast<const volatile unsigned char*>(object);
}

// One line on stderr, prefixed with the library's name: how the fake reports caller mistakes.
void complain(const char* function, const char* message);

// The object behind a public pointer, or null (after a complaint naming `function`) when the fake
// never handed it out or has freed it. The pointer is dereferenced first, see touch().
Context* findContext(State& s, ibv_context* context, const char* function);
Pd* findPd(State& s, ibv_pd* pd, const char* function);
Channel* findChannel(State& s, ibv_comp_channel* channel, const char* function);
Cq* findCq(State& s, ibv_cq* cq, const char* function);
Qp* findQp(State& s, ibv_qp* qp, const char* function);

size_t liveObjectsLocked(const State& s);

// Faults: true when `ordinal` is one of the armed targets (which is then consumed).
bool consumeFault(std::vector<uint64_t>* targets, uint64_t ordinal);
int applyCommandLocked(State& s, std::string_view command);
void readEnvironmentFaultsLocked(State& s);

// Completions (completion.cc).
void pushCompletion(State& s, Cq* cq, const ibv_wc& wc);
void removeCompletionsOf(Cq* cq, uint32_t qpNumber);
int pollCq(ibv_cq* cq, int numEntries, ibv_wc* wc);
int reqNotifyCq(ibv_cq* cq, int solicitedOnly);

// Queue pairs (queue_pair.cc, post.cc).
void moveToError(State& s, Qp* qp);
int postSend(ibv_qp* qp, ibv_send_wr* wr, ibv_send_wr** badWr);
int postRecv(ibv_qp* qp, ibv_recv_wr* wr, ibv_recv_wr** badWr);

// The worker thread that executes posted work (worker.cc).
Clock::duration nextDelayLocked(State& s);
void startWorkerLocked(State& s);
// Stops the worker if no context is left; returns the thread to join once the lock is dropped.
std::thread stopWorkerIfIdleLocked(State& s);

}  // namespace weft::fake_verbs
