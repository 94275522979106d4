#include "tune/contenders.h"

#include <algorithm>

namespace weft::tune {

double medianOf(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

std::vector<size_t> closeContenders(const std::vector<std::vector<double>>& samples) {
  size_t leader = samples.size();
  double leaderMedian = 0;
  for (size_t i = 0; i < samples.size(); ++i) {
    if (samples[i].empty()) continue;
    const double median = medianOf(samples[i]);
    if (leader == samples.size() || median < leaderMedian) {
      leader = i;
      leaderMedian = median;
    }
  }
  if (leader == samples.size()) return {};
  const auto [leaderLow, leaderHigh] =
      std::minmax_element(samples[leader].begin(), samples[leader].end());
  std::vector<size_t> close{leader};
  for (size_t i = 0; i < samples.size(); ++i) {
    if (i == leader || samples[i].empty()) continue;
    const auto [low, high] = std::minmax_element(samples[i].begin(), samples[i].end());
    if (*low <= *leaderHigh && *high >= *leaderLow) close.push_back(i);
  }
  if (close.size() == 1) close.clear();
  return close;
}

bool clearlyFaster(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.empty() || b.empty()) return false;
  return *std::max_element(a.begin(), a.end()) < *std::min_element(b.begin(), b.end());
}

std::vector<bool> mayTakeRule(const std::vector<AlgoChoice>& choices,
                              const std::vector<std::vector<double>>& samples) {
  std::vector<bool> may(choices.size(), true);
  for (size_t i = 0; i < choices.size(); ++i) {
    if (choices[i].sliceBytes == 0) continue;
    AlgoChoice own = choices[i];
    own.sliceBytes = 0;
    const auto found = std::find(choices.begin(), choices.end(), own);
    if (found != choices.end()) {
      may[i] = clearlyFaster(samples[i], samples[static_cast<size_t>(found - choices.begin())]);
    }
  }
  return may;
}

}  // namespace weft::tune
