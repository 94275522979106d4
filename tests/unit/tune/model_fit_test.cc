// Fitting the cost model to measured tables: it must recover the parameters behind times the
// model itself produced, and score a model by its error and its picks.
#include "tune/model_fit.h"

#include <tuple>

#include <catch2/catch.hpp>

#include "tune/contenders.h"

namespace weft::tune {
namespace {

Layout describedCluster(int nodes, int perNode, bool interleave, const CostParams& params) {
  Layout layout;
  layout.nodes = topo::describedNodeLayout(nodes, perNode, interleave);
  layout.nranks = layout.nodes.nranks();
  layout.cost = buildCostLayout(layout.nodes, true);
  layout.params = params;
  return layout;
}

// A table whose every all-reduce candidate "measured" what `truth` predicts on `layout`.
TuningTable tableFrom(const Layout& layout) {
  TuningTable table;
  for (size_t bytes = 16; bytes <= (size_t{16} << 20); bytes *= 4) {
    for (const AlgoChoice& choice : runnableChoices(CollType::kAllReduce, bytes, layout)) {
      TableMeasurement entry;
      entry.coll = CollType::kAllReduce;
      entry.bytes = bytes;
      entry.choice = choice;
      entry.rounds = 3;
      entry.medianMicros = predictMeasured(entry, layout);
      table.measured.push_back(entry);
    }
  }
  return table;
}

}  // namespace

TEST_CASE("fitModel recovers the links behind times the model produced", "[tune][fit]") {
  CostParams truth;
  REQUIRE(parseLink("1Gbit,60us", &truth.net).isOk());
  REQUIRE(parseLink("2GB/s,5us", &truth.shm).isOk());
  truth.gammaMicrosPerByte = 1.0 / 3000;
  const CostParams start;  // the defaults: a 10 Gbit, 25 us network, 4 GB/s, 2 us memory
  std::vector<MeasuredLayout> layouts;
  for (auto [nodes, perNode, interleave] :
       {std::tuple{4, 2, false}, std::tuple{3, 2, true}, std::tuple{2, 4, false}}) {
    const Layout measuredOn = describedCluster(nodes, perNode, interleave, truth);
    layouts.push_back(measuredLayout(
        "synthetic", describedCluster(nodes, perNode, interleave, start), tableFrom(measuredOn)));
    REQUIRE_FALSE(layouts.back().cells.empty());
  }
  std::vector<const MeasuredLayout*> all;
  for (const MeasuredLayout& one : layouts) all.push_back(&one);

  const ModelScore before = scoreModel(all, start);
  CHECK(medianOf(before.error) > 0.5);  // the defaults are far off: something to fit

  const CostParams fitted = fitModel(all, start);
  CHECK(fitted.net.alphaMicros == Approx(truth.net.alphaMicros).epsilon(0.05));
  CHECK(fitted.net.betaMicrosPerByte == Approx(truth.net.betaMicrosPerByte).epsilon(0.05));
  // Memory bandwidth is only weakly visible where the network carries the large sizes; the
  // residual says whether the fit as a whole found the times.
  const ModelScore after = scoreModel(all, fitted);
  CHECK(medianOf(after.error) < 0.02);
  // With the true parameters the model's pick is the fastest candidate at every size.
  const ModelScore exact = scoreModel(all, truth);
  REQUIRE(exact.pick.size() == 3 * 11);  // 16 B to 16 MiB by 4, per layout
  for (double pick : exact.pick) CHECK(pick == Approx(1.0));
}

TEST_CASE("the score names how far the model's pick measured from the fastest", "[tune][fit]") {
  const CostParams params;
  const Layout layout = describedCluster(4, 2, false, params);
  TuningTable table;
  // Two measured candidates at one size: the model's own pick made to measure twice the other.
  TableMeasurement probe;
  probe.coll = CollType::kAllReduce;
  probe.bytes = 4096;
  const AlgoChoice pick = modelChoice(probe, layout);
  AlgoChoice other{AlgoId::kRing, std::nullopt};
  REQUIRE_FALSE(other == pick);
  for (auto [choice, micros] : {std::pair{pick, 200.0}, std::pair{other, 100.0}}) {
    TableMeasurement entry = probe;
    entry.choice = choice;
    entry.medianMicros = micros;
    table.measured.push_back(entry);
  }
  const MeasuredLayout measured = measuredLayout("two", layout, table);
  ModelScore score;
  scoreModel(measured, params, &score);
  REQUIRE(score.pick.size() == 1);
  CHECK(score.pick[0] == Approx(2.0));
  CHECK(score.candidates == 2);
  CHECK(score.contenders == 2);  // both within twice the fastest
  CHECK_THAT(score.summary(), Catch::Contains("beyond 1.25x   1, worst 2.00x"));
}

TEST_CASE("a one-node table has nothing the model prices", "[tune][fit]") {
  const Layout oneNode = describedCluster(1, 4, false, CostParams{});
  TuningTable table;
  TableMeasurement entry;
  entry.coll = CollType::kAllReduce;
  entry.bytes = 1024;
  entry.medianMicros = 3;
  table.measured.push_back(entry);
  CHECK(measuredLayout("one node", oneNode, table).cells.empty());
  CHECK(ModelScore{}.summary() == "no modelled measurements");
}

}  // namespace weft::tune
