#include "tune/select.h"

#include <algorithm>
#include <cstdlib>
#include <sstream>

#include "algos/algorithms.h"
#include "reduce/reduce.h"

namespace weft {
namespace {

// Below this many bytes latency dominates: the binomial trees beat the pipelined chains.
constexpr size_t kSmallMessageBytes = 64 * 1024;
constexpr size_t kTwoLevelReduceBytes = 1 << 20;
// Recursive doubling sends the whole buffer log2(n) times in log2(n) steps; the ring sends
// 2(n-1)/n of it in 2(n-1) steps. The step count, not the bytes, decides below the crossover,
// which moves up with n: measured on loopback TCP at 16-32 KiB for 2 ranks and 128-256 KiB for
// 4 (oversubscribed) ranks (docs/ALGORITHMS.md). The cost-model tuner will replace this rule.
size_t recursiveDoublingLimit(int nranks) {
  return 32 * 1024 * static_cast<size_t>(nranks - 1);
}

// One host with shared memory: the direct algorithms work in place in the shared windows.
// Up to kShmFlatAllreduceBytes every rank reduces everything itself (one round of flags); above,
// each rank reduces its share. With only two ranks and large messages the ring over the shm
// transport moves less memory (3.5 buffers per rank with single-copy reads, against the direct
// algorithm's 5.5 for its copies in and out of the windows) and wins; from 4 ranks the direct
// algorithm's traffic is the smaller (docs/ALGORITHMS.md has the measurements).
constexpr size_t kTwoRankRingBytes = 256 * 1024;

AlgoId defaultOneHostAlgo(const CollArgs& args, const Layout& layout, size_t bytes) {
  switch (args.coll) {
    case CollType::kAllReduce:
      if (bytes <= std::min(kShmFlatAllreduceBytes, layout.windowAreaBytes))
        return AlgoId::kShmFlat;
      // With every rank's buffers in weftMemAlloc memory the direct algorithm copies nothing
      // (3 buffers per rank at two ranks, against the ring's 3.5 and its system calls).
      return layout.nranks == 2 && bytes >= kTwoRankRingBytes && !args.symmetricWindows
                 ? AlgoId::kRing
                 : AlgoId::kShmDirect;
    case CollType::kBroadcast:
    case CollType::kReduce:
    case CollType::kAllGather:
    case CollType::kReduceScatter:
      return AlgoId::kShmDirect;
    case CollType::kBarrier:
      return AlgoId::kShmFlat;
    default:
      return AlgoId::kPointToPoint;  // the caller falls back to the general rule
  }
}

AlgoId defaultAlgo(const CollArgs& args, size_t bytes, const Layout& layout) {
  const int nranks = layout.nranks;
  if (layout.oneHostShm && nranks > 1) {
    AlgoId direct = defaultOneHostAlgo(args, layout, bytes);
    if (direct != AlgoId::kPointToPoint) return direct;
  }
  switch (args.coll) {
    case CollType::kAllReduce:
      return bytes <= recursiveDoublingLimit(nranks) || args.count < static_cast<size_t>(nranks)
                 ? AlgoId::kRecursiveDoubling
                 : AlgoId::kRing;
    case CollType::kBroadcast:
      return bytes <= kSmallMessageBytes ? AlgoId::kBinomial : AlgoId::kChain;
    case CollType::kReduce:
      // At 64 KiB itself the chain measured faster on 7 of 10 emulated clusters (1.2-1.6x)
      // and level on the others (docs/PERFORMANCE.md "Broadcast and reduce").
      if (bytes < kSmallMessageBytes) return AlgoId::kBinomial;
      // A chain through ranks not numbered node by node crosses nodes at most of its hops; the
      // two-level reduce crosses N-1 times: from 1 MiB it measured 1.1-1.9x faster than the
      // chain on every interleaved emulated cluster (at 256 KiB it was slower on some).
      return bytes >= kTwoLevelReduceBytes && layout.nodes.nodes() > 1 &&
                     layout.nodes.maxPerNode() > 1 && !layout.nodes.numberedByNode()
                 ? AlgoId::kTwoLevelLeader
                 : AlgoId::kChain;
    case CollType::kAllGather:
    case CollType::kReduceScatter:
      return AlgoId::kRing;
    case CollType::kAlltoAll:
      return AlgoId::kPairwise;
    case CollType::kGather:
    case CollType::kScatter:
      return AlgoId::kDirect;
    case CollType::kBarrier:
      return AlgoId::kDissemination;
    case CollType::kSend:
    case CollType::kRecv:
      return AlgoId::kPointToPoint;
  }
  return AlgoId::kRing;
}

// "lo-hi" or "lo-" into a SizeRule's bounds.
bool parseRange(const std::string& text, SizeRule* rule) {
  size_t dash = text.find('-');
  if (dash == std::string::npos || !tune::parseSizeText(text.substr(0, dash), &rule->minBytes))
    return false;
  std::string upper = text.substr(dash + 1);
  rule->maxBytes = SIZE_MAX;
  return upper.empty() ||
         (tune::parseSizeText(upper, &rule->maxBytes) && rule->maxBytes > rule->minBytes);
}

bool collFromName(const std::string& name, CollType* out) {
  for (int i = 0; i < kNumCollTypes; ++i) {
    if (name == collName(static_cast<CollType>(i))) {
      *out = static_cast<CollType>(i);
      return true;
    }
  }
  return false;
}

}  // namespace

Status parseAlgoOverrides(const std::string& text, AlgoOverrides* out) {
  *out = AlgoOverrides{};
  std::stringstream tokens(text);
  std::string token;
  while (std::getline(tokens, token, ',')) {
    if (token.empty()) continue;
    size_t equals = token.find('=');
    std::string algoText = equals == std::string::npos ? token : token.substr(equals + 1);
    AlgoId algo;
    if (!algoFromName(algoText.substr(0, algoText.find_first_of("/@")).c_str(), &algo)) {
      return invalidArgument("WEFT_ALGO: unknown algorithm '" + algoText + "'");
    }
    if (equals == std::string::npos) {
      bool any = false;
      for (int i = 0; i < kNumCollTypes; ++i) {
        tune::AlgoChoice choice;
        if (tune::parseChoice(static_cast<CollType>(i), algoText, &choice).isOk()) {
          out->byColl[i] = choice;
          any = true;
        }
      }
      if (!any) return invalidArgument("WEFT_ALGO: no collective has algorithm '" + algoText + "'");
      continue;
    }
    CollType coll;
    std::string collText = token.substr(0, equals);
    std::string rangeText;
    if (size_t colon = collText.find(':'); colon != std::string::npos) {
      rangeText = collText.substr(colon + 1);
      collText = collText.substr(0, colon);
    }
    if (!collFromName(collText, &coll)) {
      return invalidArgument("WEFT_ALGO: unknown collective '" + collText + "'");
    }
    tune::AlgoChoice choice;
    if (Status parsed = tune::parseChoice(coll, algoText, &choice); !parsed.isOk()) {
      return parsed.withContext("WEFT_ALGO");
    }
    if (rangeText.empty()) {
      out->byColl[static_cast<int>(coll)] = choice;
      continue;
    }
    SizeRule rule;
    rule.choice = choice;
    if (!parseRange(rangeText, &rule)) {
      return invalidArgument("WEFT_ALGO: bad size range '" + rangeText + "' in '" + token +
                             "' (expected e.g. 0-16K or 16K-)");
    }
    out->bySize[static_cast<int>(coll)].push_back(rule);
  }
  return Status::ok();
}

// `algo` with its cheapest stage among nodes (only two-level algorithms have one); micros < 0
// where the model does not cover it.
Candidate bestVariant(CollType coll, AlgoId algo, size_t bytes, const Layout& layout,
                      size_t sliceBytes) {
  const std::vector<AlgoId> inners = tune::innerAlgos(coll);
  Candidate best{algo, inners.empty() ? AlgoId::kRing : inners.front(), -1};
  const bool twoLevel = isTwoLevel(algo);
  // A two-level algorithm with no choice of stage among nodes (all-gather's) is priced once.
  for (AlgoId inner : twoLevel && !inners.empty() ? inners : std::vector<AlgoId>{best.inner}) {
    double micros =
        tune::predictMicros(layout.params, layout.cost, coll, algo, inner, bytes, sliceBytes);
    if (micros >= 0 && (best.micros < 0 || micros < best.micros)) best = {algo, inner, micros};
  }
  return best;
}

std::vector<Candidate> rankCandidates(CollType coll, size_t bytes, const Layout& layout,
                                      size_t sliceBytes) {
  std::vector<Candidate> ranked;
  if (layout.cost.nodes <= 1) return ranked;
  for (AlgoId algo : tune::modelledAlgos(coll, layout.cost)) {
    Candidate best = bestVariant(coll, algo, bytes, layout, sliceBytes);
    if (best.micros >= 0) ranked.push_back(best);
  }
  // Ties go to the earlier (simpler) algorithm, so the order is the same on every rank.
  std::stable_sort(ranked.begin(), ranked.end(),
                   [](const Candidate& a, const Candidate& b) { return a.micros < b.micros; });
  return ranked;
}

Plan choosePlan(const CollArgs& args, const Layout& layout, const AlgoOverrides& overrides,
                size_t sliceBytes) {
  Plan plan;
  const CallSizes sizes = callSizes(args, layout.nranks);
  const size_t bytes = sizes.message;
  const size_t callBytes = sizes.block;
  std::optional<tune::AlgoChoice> forced = overrides.byColl[static_cast<int>(args.coll)];
  for (const SizeRule& rule : overrides.bySize[static_cast<int>(args.coll)]) {
    if (callBytes >= rule.minBytes && callBytes < rule.maxBytes) {
      forced = rule.choice;
      break;
    }
  }
  plan.forced = forced.has_value();
  if (!forced && layout.table) {
    if (const tune::TableRule* rule = layout.table->ruleFor(args.coll, callBytes)) {
      forced = rule->choice;
      plan.fromTable = true;
    }
  }
  // A rule that names its slice ("ring@128K") overrides the communicator's.
  if (forced && forced->sliceBytes != 0) {
    sliceBytes = forced->sliceBytes;
    plan.namedSliceBytes = forced->sliceBytes;
  }
  plan.sliceBytes = sliceBytes;
  if (forced) {
    // A two-level algorithm forced without its stage among nodes gets the model's best one.
    plan.algo = forced->algo;
    plan.inner = forced->inner ? *forced->inner
                               : bestVariant(args.coll, plan.algo, bytes, layout, sliceBytes).inner;
  } else if (std::vector<Candidate> ranked = rankCandidates(args.coll, bytes, layout, sliceBytes);
             !ranked.empty()) {
    plan.algo = ranked.front().algo;
    plan.inner = ranked.front().inner;
    plan.predictedMicros = ranked.front().micros;
  } else {
    plan.algo = defaultAlgo(args, callBytes, layout);
  }

  // Reduce is not priced: its stage among nodes follows the flat reduce's size rule.
  if (args.coll == CollType::kReduce && isTwoLevel(plan.algo) && !(forced && forced->inner)) {
    plan.inner = callBytes < kSmallMessageBytes ? AlgoId::kBinomial : AlgoId::kChain;
  }
  plan.nearestFirst =
      plan.algo == AlgoId::kRabenseifner && tune::rabenseifnerNearestFirst(layout.cost);
  if (plan.algo == AlgoId::kTree || plan.inner == AlgoId::kTree) {
    plan.sliceBytes = tune::treeChunkBytes(bytes, sliceBytes);
  }
  // shm_flat holds the whole message in one window area; a larger one goes direct.
  if (plan.algo == AlgoId::kShmFlat && callBytes > layout.windowAreaBytes) {
    plan.algo = AlgoId::kShmDirect;
  }
  return plan;
}

Status checkOverrides(const AlgoOverrides& overrides, const Layout& layout) {
  for (int coll = 0; coll < kNumCollTypes; ++coll) {
    const auto& forced = overrides.byColl[coll];
    if (forced && needsSharedWindows(forced->algo) && !layout.oneHostShm && layout.nranks > 1) {
      return invalidUsage(std::string("WEFT_ALGO forces ") + algoName(forced->algo) + " for " +
                          collName(static_cast<CollType>(coll)) +
                          ", which needs every rank on one host with shared memory");
    }
  }
  return Status::ok();
}

std::vector<tune::AlgoChoice> runnableChoices(CollType coll, size_t callBytes,
                                              const Layout& layout) {
  std::vector<tune::AlgoChoice> choices;
  const bool twoLevelUseful = layout.nodes.nodes() > 1 && layout.nodes.maxPerNode() > 1;
  for (int id = 0; id < kNumAlgoIds; ++id) {
    const AlgoId algo = static_cast<AlgoId>(id);
    if (findAlgorithm(coll, algo) == nullptr) continue;
    if (needsSharedWindows(algo) && !(layout.oneHostShm && layout.nranks > 1)) continue;
    // Above one window area shm_flat runs as shm_direct (choosePlan): nothing new to time.
    if (algo == AlgoId::kShmFlat && callBytes > layout.windowAreaBytes) continue;
    if (isTwoLevel(algo)) {
      if (!twoLevelUseful) continue;
      // Without shared memory between node-mates it runs as two_level_leader: nothing new.
      if (algo == AlgoId::kTwoLevelShm && !layout.cost.intraShm) continue;
      const std::vector<AlgoId> inners = tune::innerAlgos(coll);
      if (inners.empty()) choices.push_back({algo, std::nullopt});
      for (AlgoId inner : inners) choices.push_back({algo, inner});
      continue;
    }
    choices.push_back({algo, std::nullopt});
  }
  return choices;
}

std::vector<tune::AlgoChoice> sliceVariants(const tune::AlgoChoice& choice, size_t messageBytes,
                                            const Layout& layout, size_t defaultSlice,
                                            const std::vector<size_t>& slices) {
  std::vector<tune::AlgoChoice> variants;
  const bool twoLevel = isTwoLevel(choice.algo);
  // A two-level choice without its stage among nodes (all-gather's) pipelines nothing of its own.
  if (twoLevel && !choice.inner) return variants;
  const AlgoId piped = twoLevel ? *choice.inner : choice.algo;
  if (!cutsIntoSlices(choice.algo, piped)) return variants;
  // The largest piece one pipelined transfer carries: a ring's block among its ranks (among the
  // nodes for a stage among nodes), a chain's whole message.
  const size_t ringRanks =
      static_cast<size_t>(std::max(1, twoLevel ? layout.nodes.nodes() : layout.nranks));
  const size_t piece = piped == AlgoId::kRing ? messageBytes / ringRanks : messageBytes;
  for (size_t slice : slices) {
    const bool differs = piped == AlgoId::kTree ? tune::treeChunkBytes(piece, slice) !=
                                                      tune::treeChunkBytes(piece, defaultSlice)
                                                : piece > std::min(slice, defaultSlice);
    if (slice == defaultSlice || !differs) continue;
    tune::AlgoChoice variant = choice;
    variant.sliceBytes = slice;
    variants.push_back(variant);
  }
  return variants;
}

Status checkTable(const tune::TuningTable& table, const Layout& layout) {
  for (const tune::TableRule& rule : table.rules) {
    if (needsSharedWindows(rule.choice.algo) && !layout.oneHostShm && layout.nranks > 1) {
      return invalidUsage("tuning table " + table.source + " chooses " +
                          algoName(rule.choice.algo) + " for " + collName(rule.coll) +
                          ", which needs every rank on one host with shared memory");
    }
  }
  return Status::ok();
}

}  // namespace weft
