// Tuning tables: the algorithm choices that `weft_tune measure` timed on a job's own layout,
// written as a text file and loaded at init (WEFT_TUNE_FILE, or the search path of
// table_search.h). A table is keyed by its layout's fingerprint, so a job only ever uses a
// table measured on a layout like its own. The format is documented in docs/TUNING.md
// "Tuning tables":
//
//   weft-tuning 1
//   layout ranks=8 nodes=4 per-node=2,2,2,2 numbering=block intra=shm net=tcp
//   measured allreduce 4096 two_level_leader/recursive_doubling 212.40 3.1 3
//   rule allreduce 0 6144 recursive_doubling
//   rule allreduce 6144 - two_level_leader/ring
//
// Rules decide; measured lines are the evidence behind them (for weft_tune explain). Sizes are
// bytes of the call's count, as in WEFT_ALGO's ranges.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "algos/plan.h"
#include "base/call.h"
#include "base/status.h"
#include "topo/node_layout.h"

namespace weft::tune {

// An algorithm and, for the two-level ones, the stage among nodes: "two_level_leader/ring"; for
// one that pipelines its messages, optionally the slice it cuts them into: "ring@128K".
struct AlgoChoice {
  AlgoId algo = AlgoId::kRing;
  std::optional<AlgoId> inner;
  size_t sliceBytes = 0;  // 0: the communicator's (WEFT_SLICE_BYTES)
  bool operator==(const AlgoChoice& other) const {
    return algo == other.algo && inner == other.inner && sliceBytes == other.sliceBytes;
  }
};
std::string choiceName(const AlgoChoice& choice);
// Checks that `coll` has the algorithm, that a stage among nodes is one it can use, and that a
// named slice is one the algorithm cuts its messages into, within WEFT_SLICE_BYTES's range.
Status parseChoice(CollType coll, const std::string& text, AlgoChoice* out);
// "16K" -> 16384: digits with an optional binary K, M or G; false on anything else.
bool parseSizeText(const std::string& text, size_t* out);
// The range WEFT_SLICE_BYTES and a named slice must lie in.
constexpr size_t kMinSliceBytes = 64;
constexpr size_t kMaxSliceBytes = size_t{1} << 30;
// A slice size as parseSizeText reads it, within that range; false otherwise.
bool parseSliceSize(const std::string& text, size_t* out);

struct TableRule {
  CollType coll = CollType::kAllReduce;
  size_t minBytes = 0;
  size_t maxBytes = SIZE_MAX;  // exclusive
  AlgoChoice choice;
};

struct TableMeasurement {
  CollType coll = CollType::kAllReduce;
  size_t bytes = 0;
  AlgoChoice choice;
  double medianMicros = 0;
  double spreadPercent = 0;  // (slowest - fastest) / median over the rounds
  int rounds = 0;
};

struct TuningTable {
  std::string layout;                 // layoutFingerprint() of the measured job
  std::vector<std::string> comments;  // the header's "#" lines, kept when rewritten
  std::vector<TableRule> rules;
  std::vector<TableMeasurement> measured;
  std::string source;  // where it was read from (not part of the table)

  // Over the layout and the rules: what decides. Equal hashes mean equal choices.
  uint64_t hash() const;
  // The first rule covering `callBytes` for `coll`, or null.
  const TableRule* ruleFor(CollType coll, size_t callBytes) const;
};

// Errors name `source` and the line.
Status parseTuningTable(const std::string& text, const std::string& source, TuningTable* out);
std::string formatTuningTable(const TuningTable& table);

// The rules the measurements imply: for each collective and measured size the fastest median
// wins; a winner covers the sizes up to the geometric midpoint with its neighbours; adjacent
// equal winners merge. The smallest size extends down to 0 and the largest up without bound.
std::vector<TableRule> rulesFromMeasurements(const std::vector<TableMeasurement>& measured);

// "ranks=8 nodes=4 per-node=2,2,2,2 numbering=block intra=shm net=tcp". Numbering is block
// (node by node), interleave (round robin over the nodes that still have room) or, for any other
// order, map:<node of each rank>. `network` is the transport between nodes ("none" on one).
std::string layoutFingerprint(const topo::NodeLayout& nodes, bool intraShm,
                              const std::string& network);
// The node layout a fingerprint describes (for weft_tune explain); false when malformed.
bool layoutFromFingerprint(const std::string& fingerprint, topo::NodeLayout* nodes, bool* intraShm);
// Its rank count (0 when malformed).
int fingerprintRanks(const std::string& fingerprint);

}  // namespace weft::tune
