// The process-wide state, fault injection (weft_fake_verbs_control and WEFT_FAKE_VERBS_FAULTS),
// the live-object count, and the small verbs that touch no object.
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "fake_verbs_control.h"
#include "fake_verbs_internal.h"

namespace weft::fake_verbs {

State& state() {
  static State* const instance = new State;
  return *instance;
}

void complain(const char* function, const char* message) {
  std::fprintf(stderr, "weft_fake_verbs: %s: %s\n", function, message);
}

namespace {

template <typename Public, typename Object>
Object* findIn(const Registry<Public, Object>& registry, Public* pub, const char* function,
               const char* what) {
  if (!pub) return nullptr;
  touch(pub);
  Object* found = registry.find(pub);
  if (!found) {
    std::string message = std::string("unknown or already released ") + what;
    complain(function, message.c_str());
  }
  return found;
}

}  // namespace

Context* findContext(State& s, ibv_context* context, const char* function) {
  return findIn(s.contexts, context, function, "context");
}
Pd* findPd(State& s, ibv_pd* pd, const char* function) {
  return findIn(s.pds, pd, function, "PD");
}
Channel* findChannel(State& s, ibv_comp_channel* channel, const char* function) {
  return findIn(s.channels, channel, function, "completion channel");
}
Cq* findCq(State& s, ibv_cq* cq, const char* function) {
  return findIn(s.cqs, cq, function, "CQ");
}
Qp* findQp(State& s, ibv_qp* qp, const char* function) {
  return findIn(s.qps, qp, function, "QP");
}

size_t liveObjectsLocked(const State& s) {
  return s.deviceLists.size() + s.contexts.size() + s.pds.size() + s.mrs.size() +
         s.channels.size() + s.cqs.size() + s.qps.size();
}

bool consumeFault(std::vector<uint64_t>* targets, uint64_t ordinal) {
  for (auto it = targets->begin(); it != targets->end(); ++it) {
    if (*it == ordinal) {
      targets->erase(it);
      return true;
    }
  }
  return false;
}

namespace {

std::vector<std::string_view> splitWords(std::string_view text) {
  std::vector<std::string_view> words;
  size_t pos = 0;
  while (pos < text.size()) {
    while (pos < text.size() && (text[pos] == ' ' || text[pos] == '\t')) ++pos;
    size_t end = pos;
    while (end < text.size() && text[end] != ' ' && text[end] != '\t') ++end;
    if (end > pos) words.push_back(text.substr(pos, end - pos));
    pos = end;
  }
  return words;
}

std::optional<uint64_t> parseCount(std::string_view word) {
  uint64_t value = 0;
  auto [end, error] = std::from_chars(word.data(), word.data() + word.size(), value);
  if (error != std::errc() || end != word.data() + word.size()) return std::nullopt;
  return value;
}

void killContextLocked(State& s, uint64_t openIndex) {
  if (openIndex >= s.faults.contextsOpened) {
    s.faults.killedContexts.push_back(openIndex);  // ibv_open_device checks it
    return;
  }
  // Already opened: it dies now, if it is still open.
  s.contexts.forEach([&s, openIndex](Context* context) {
    if (context->openEpoch == s.resets && context->openIndex == openIndex) context->dead = true;
  });
  s.workerWakeup.notify_all();
}

}  // namespace

int applyCommandLocked(State& s, std::string_view command) {
  std::vector<std::string_view> words = splitWords(command);
  if (words.empty()) return -1;
  if (words.size() == 1 && words[0] == "reset") {
    s.faults = Faults{};
    ++s.resets;
    return 0;
  }
  if (words.size() != 2) return -1;
  std::optional<uint64_t> count = parseCount(words[1]);
  if (!count) return -1;
  Faults& f = s.faults;
  if (words[0] == "lose_completion" && *count > 0) {
    f.lostCompletions.push_back(f.completions + *count);
  } else if (words[0] == "fail_reg_mr" && *count > 0) {
    f.failedRegMrs.push_back(f.regMrCalls + *count);
  } else if (words[0] == "fail_create_qp" && *count > 0) {
    f.failedCreateQps.push_back(f.createQpCalls + *count);
  } else if (words[0] == "kill_context") {
    killContextLocked(s, *count);
  } else if (words[0] == "delay_us") {
    f.delay = std::chrono::microseconds(*count);
  } else {
    return -1;
  }
  return 0;
}

void readEnvironmentFaultsLocked(State& s) {
  if (s.faults.environmentRead) return;
  s.faults.environmentRead = true;
  const char* value = std::getenv("WEFT_FAKE_VERBS_FAULTS");
  if (!value) return;
  std::string_view rest(value);
  while (!rest.empty()) {
    size_t end = rest.find(';');
    std::string_view command = rest.substr(0, end);
    if (!splitWords(command).empty() && applyCommandLocked(s, command) != 0) {
      std::string message = "ignoring unknown command in WEFT_FAKE_VERBS_FAULTS: ";
      message.append(command);
      complain("ibv_open_device", message.c_str());
    }
    rest = end == std::string_view::npos ? std::string_view() : rest.substr(end + 1);
  }
}

extern "C" {

WEFT_FAKE_VERBS_EXPORT int weft_fake_verbs_control(const char* command) {
  if (!command) return -1;
  State& s = state();
  std::lock_guard lock(s.mutex);
  return applyCommandLocked(s, command);
}

WEFT_FAKE_VERBS_EXPORT int weft_fake_verbs_live_objects(void) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  return static_cast<int>(liveObjectsLocked(s));
}

WEFT_FAKE_VERBS_EXPORT const char* ibv_wc_status_str(enum ibv_wc_status status) {
  switch (status) {
    case IBV_WC_SUCCESS:
      return "success";
    case IBV_WC_LOC_LEN_ERR:
      return "local length error";
    case IBV_WC_LOC_QP_OP_ERR:
      return "local QP operation error";
    case IBV_WC_LOC_EEC_OP_ERR:
      return "local EE context operation error";
    case IBV_WC_LOC_PROT_ERR:
      return "local protection error";
    case IBV_WC_WR_FLUSH_ERR:
      return "Work Request Flushed Error";
    case IBV_WC_MW_BIND_ERR:
      return "memory management operation error";
    case IBV_WC_BAD_RESP_ERR:
      return "bad response error";
    case IBV_WC_LOC_ACCESS_ERR:
      return "local access error";
    case IBV_WC_REM_INV_REQ_ERR:
      return "remote invalid request error";
    case IBV_WC_REM_ACCESS_ERR:
      return "remote access error";
    case IBV_WC_REM_OP_ERR:
      return "remote operation error";
    case IBV_WC_RETRY_EXC_ERR:
      return "transport retry counter exceeded";
    case IBV_WC_RNR_RETRY_EXC_ERR:
      return "RNR retry counter exceeded";
    case IBV_WC_LOC_RDD_VIOL_ERR:
      return "local RDD violation error";
    case IBV_WC_REM_INV_RD_REQ_ERR:
      return "remote invalid RD request";
    case IBV_WC_REM_ABORT_ERR:
      return "aborted error";
    case IBV_WC_INV_EECN_ERR:
      return "invalid EE context number";
    case IBV_WC_INV_EEC_STATE_ERR:
      return "invalid EE context state";
    case IBV_WC_FATAL_ERR:
      return "fatal error";
    case IBV_WC_RESP_TIMEOUT_ERR:
      return "response timeout error";
    case IBV_WC_GENERAL_ERR:
      return "general error";
    case IBV_WC_TM_ERR:
      return "TM error";
    case IBV_WC_TM_RNDV_INCOMPLETE:
      return "TM software rendezvous";
  }
  return "unknown";
}

// Kernels since 5.13 keep registered memory intact across fork, and the real library then has
// nothing to do either.
WEFT_FAKE_VERBS_EXPORT int ibv_fork_init(void) {
  return 0;
}

}  // extern "C"

}  // namespace weft::fake_verbs
