#include "tune/model_fit.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>

#include "tune/contenders.h"

namespace weft::tune {
namespace {

constexpr size_t kModelSliceBytes = 512 * 1024;

CollArgs argsFor(const TableMeasurement& entry) {
  CollArgs args;
  args.coll = entry.coll;
  args.type = weftFloat32;
  args.count = entry.bytes / sizeof(float);
  return args;
}

// The fitted quantities, as logs so that the simplex cannot make one negative.
constexpr int kDims = 5;
using Point = std::array<double, kDims>;

Point toPoint(const CostParams& params) {
  return {std::log(params.shm.alphaMicros), std::log(params.shm.betaMicrosPerByte),
          std::log(params.net.alphaMicros), std::log(params.net.betaMicrosPerByte),
          std::log(params.gammaMicrosPerByte)};
}

CostParams fromPoint(const Point& point, CostParams params) {
  params.shm = {std::exp(point[0]), std::exp(point[1])};
  params.net = {std::exp(point[2]), std::exp(point[3])};
  params.gammaMicrosPerByte = std::exp(point[4]);
  return params;
}

}  // namespace

double predictMeasured(const TableMeasurement& entry, const Layout& layout) {
  if (layout.nodes.nodes() <= 1) return -1;
  const size_t bytes = callSizes(argsFor(entry), layout.nranks).message;
  const size_t slice = entry.choice.sliceBytes != 0 ? entry.choice.sliceBytes : kModelSliceBytes;
  return predictMicros(layout.params, layout.cost, entry.coll, entry.choice.algo,
                       entry.choice.inner.value_or(entry.choice.algo), bytes, slice);
}

AlgoChoice modelChoice(const TableMeasurement& entry, const Layout& layout) {
  Layout modelOnly = layout;
  modelOnly.table = nullptr;
  const Plan plan = choosePlan(argsFor(entry), modelOnly, AlgoOverrides{}, kModelSliceBytes);
  AlgoChoice choice{plan.algo, std::nullopt};
  if (isTwoLevel(plan.algo)) choice.inner = plan.inner;
  return choice;
}

MeasuredLayout measuredLayout(const std::string& name, const Layout& layout,
                              const TuningTable& table) {
  MeasuredLayout out{name, layout, {}};
  for (const TableMeasurement& entry : table.measured) {
    if (entry.medianMicros <= 0 || predictMeasured(entry, layout) <= 0) continue;
    auto same = std::find_if(out.cells.begin(), out.cells.end(), [&](const auto& cell) {
      return cell.front().coll == entry.coll && cell.front().bytes == entry.bytes;
    });
    if (same == out.cells.end()) {
      out.cells.push_back({entry});
    } else {
      same->push_back(entry);
    }
  }
  return out;
}

CellPick pickInCell(const std::vector<TableMeasurement>& cell, const Layout& layout) {
  CellPick out;
  out.fastest = &cell.front();
  out.pick = modelChoice(cell.front(), layout);
  for (const TableMeasurement& entry : cell) {
    if (entry.medianMicros < out.fastest->medianMicros) out.fastest = &entry;
    if (entry.choice == out.pick) out.picked = &entry;
  }
  return out;
}

void scoreModel(const MeasuredLayout& measured, const CostParams& params, ModelScore* score) {
  Layout layout = measured.layout;
  layout.params = params;
  for (const std::vector<TableMeasurement>& cell : measured.cells) {
    const CellPick cellPick = pickInCell(cell, layout);
    const TableMeasurement* fastest = cellPick.fastest;
    for (const TableMeasurement& entry : cell) {
      const double ratio = predictMeasured(entry, layout) / entry.medianMicros;
      score->error.push_back(std::fabs(ratio - 1));
      ++score->candidates;
      if (entry.medianMicros <= kContenderFactor * fastest->medianMicros) {
        score->squaredLog += std::log(ratio) * std::log(ratio);
        ++score->contenders;
      }
    }
    // A pick that was not measured (not a candidate there) is left out, not counted a loss.
    if (cellPick.picked) {
      score->pick.push_back(cellPick.picked->medianMicros / fastest->medianMicros);
    }
  }
}

ModelScore scoreModel(const std::vector<const MeasuredLayout*>& measured,
                      const CostParams& params) {
  ModelScore score;
  for (const MeasuredLayout* one : measured) scoreModel(*one, params, &score);
  return score;
}

std::string ModelScore::summary() const {
  if (candidates == 0) return "no modelled measurements";
  size_t within = 0, picksWithin = 0, picksBeyond = 0;
  for (double e : error) within += e <= 0.25;
  for (double p : pick) {
    picksWithin += p <= 1.10;
    picksBeyond += p > 1.25;
  }
  const double worst = pick.empty() ? 0 : *std::max_element(pick.begin(), pick.end());
  char text[200];
  std::snprintf(text, sizeof(text),
                "error median %3.0f%%, within 25%% %4zu of %4zu | picks within 10%% %3zu of %3zu, "
                "beyond 1.25x %3zu, worst %.2fx",
                100 * medianOf(error), within, candidates, picksWithin, pick.size(), picksBeyond,
                worst);
  return text;
}

// Nelder-Mead: five parameters settle within a few hundred evaluations.
CostParams fitModel(const std::vector<const MeasuredLayout*>& measured, const CostParams& start) {
  auto objective = [&](const Point& point) {
    const ModelScore score = scoreModel(measured, fromPoint(point, start));
    return score.contenders ? score.squaredLog / score.contenders : 0.0;
  };
  std::array<Point, kDims + 1> simplex;
  std::array<double, kDims + 1> value;
  simplex[0] = toPoint(start);
  for (int i = 1; i <= kDims; ++i) {
    simplex[i] = simplex[0];
    simplex[i][i - 1] += 1.0;  // a factor of e in one parameter
  }
  for (int i = 0; i <= kDims; ++i) value[i] = objective(simplex[i]);
  for (int iteration = 0; iteration < 2000; ++iteration) {
    std::array<int, kDims + 1> order;
    for (int i = 0; i <= kDims; ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](int a, int b) { return value[a] < value[b]; });
    const int best = order[0], worst = order[kDims], secondWorst = order[kDims - 1];
    if (value[worst] - value[best] < 1e-9) break;
    Point centroid{};
    for (int i = 0; i < kDims; ++i) {
      for (int d = 0; d < kDims; ++d) centroid[d] += simplex[order[i]][d] / kDims;
    }
    // Points on the line from the centroid through the worst vertex (t = 1: the worst).
    auto along = [&](double t) {
      Point point;
      for (int d = 0; d < kDims; ++d)
        point[d] = centroid[d] + t * (simplex[worst][d] - centroid[d]);
      return point;
    };
    auto replaceWorst = [&](const Point& point, double v) {
      simplex[worst] = point;
      value[worst] = v;
    };
    const Point reflected = along(-1);
    const double reflectedValue = objective(reflected);
    if (reflectedValue < value[best]) {
      const Point expanded = along(-2);
      const double expandedValue = objective(expanded);
      if (expandedValue < reflectedValue) {
        replaceWorst(expanded, expandedValue);
      } else {
        replaceWorst(reflected, reflectedValue);
      }
      continue;
    }
    if (reflectedValue < value[secondWorst]) {
      replaceWorst(reflected, reflectedValue);
      continue;
    }
    const Point contracted = along(0.5);
    const double contractedValue = objective(contracted);
    if (contractedValue < value[worst]) {
      replaceWorst(contracted, contractedValue);
      continue;
    }
    for (int i = 0; i <= kDims; ++i) {  // shrink towards the best
      if (i == best) continue;
      for (int d = 0; d < kDims; ++d) {
        simplex[i][d] = simplex[best][d] + 0.5 * (simplex[i][d] - simplex[best][d]);
      }
      value[i] = objective(simplex[i]);
    }
  }
  const auto best = std::min_element(value.begin(), value.end()) - value.begin();
  return fromPoint(simplex[best], start);
}

}  // namespace weft::tune
