// Fitting the cost model to measured tuning tables, and scoring it against them. A table's
// `measured` lines are the times of every candidate at each size on one layout; the model is
// good where its predictions are near those times and, what matters for the choice, where the
// candidate it would pick measured near the fastest. `weft_tune fit` reports both, before and
// after fitting the links and the reduction speed (docs/TUNING.md "Fitting the model").
#pragma once

#include <string>
#include <vector>

#include "tune/cost_model.h"
#include "tune/select.h"
#include "tune/tuning_table.h"

namespace weft::tune {

// One table's layout and its modelled measurements, grouped by collective and size.
struct MeasuredLayout {
  std::string name;
  Layout layout;
  std::vector<std::vector<TableMeasurement>> cells;
};

// Groups the table's measurements the model prices on `layout` (several nodes; all-reduce,
// broadcast, all-gather) into cells.
MeasuredLayout measuredLayout(const std::string& name, const Layout& layout,
                              const TuningTable& table);

// The model's prediction for a measured candidate on `layout` (negative where it has none).
double predictMeasured(const TableMeasurement& entry, const Layout& layout);
// What the model alone (no table, no overrides) chooses for the entry's collective and size.
AlgoChoice modelChoice(const TableMeasurement& entry, const Layout& layout);

// One measured cell (a collective and size) as the model sees it: its fastest candidate, the
// model's pick, and the pick's measurement (null where the pick was not measured there).
struct CellPick {
  const TableMeasurement* fastest = nullptr;
  AlgoChoice pick;
  const TableMeasurement* picked = nullptr;
};
CellPick pickInCell(const std::vector<TableMeasurement>& cell, const Layout& layout);

struct ModelScore {
  size_t candidates = 0;      // modelled candidates at every size
  std::vector<double> error;  // |predicted / measured - 1| per candidate
  std::vector<double> pick;   // per size: the measured time of the model's pick / the fastest
  double squaredLog = 0;      // the fit's objective, over the contenders
  size_t contenders = 0;      // candidates within kContenderFactor of their size's fastest
  std::string summary() const;
};

// Candidates up to this many times the fastest at their size take part in the fit: one
// several times slower is never picked, however wrong its prediction.
constexpr double kContenderFactor = 2;

void scoreModel(const MeasuredLayout& measured, const CostParams& params, ModelScore* score);
ModelScore scoreModel(const std::vector<const MeasuredLayout*>& measured, const CostParams& params);

// The links (alpha and beta of shared memory and of the network) and the reduction speed that
// minimise the mean squared log ratio of predicted to measured time over the contenders,
// starting from `start` (its other fields are kept).
CostParams fitModel(const std::vector<const MeasuredLayout*>& measured, const CostParams& start);

}  // namespace weft::tune
