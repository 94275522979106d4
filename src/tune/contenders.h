// Deciding a measured cell fairly. A few rounds of timings on a busy machine can crown a
// candidate by a fluke: one quiet round, or a noisy one for the rival. When the rivals' timings
// overlap, the cell is not decided yet, and `weft_tune measure` gives those candidates more
// rounds before it writes a rule.
#pragma once

#include <cstddef>
#include <vector>

#include "tune/tuning_table.h"

namespace weft::tune {

// samples[i]: candidate i's timings over the rounds so far (empty: not timed). The leader is the
// candidate with the lowest median; its contenders are those whose range of timings [fastest,
// slowest] overlaps the leader's. Returns the leader's index followed by its contenders', or an
// empty list when no other candidate overlaps the leader (the cell is decided).
std::vector<size_t> closeContenders(const std::vector<std::vector<double>>& samples);

// Whether `a`'s timings stand clear below `b`'s: a's slowest faster than b's fastest (false when
// either has none). A slice variant replaces its algorithm's own slice only on such evidence.
bool clearlyFaster(const std::vector<double>& a, const std::vector<double>& b);

// For each candidate (choices[i], timed samples[i]), whether it may take its size's rule: all
// but the slice variants whose timings do not stand clear below those of the same algorithm
// with the communicator's slice, where that was timed.
std::vector<bool> mayTakeRule(const std::vector<AlgoChoice>& choices,
                              const std::vector<std::vector<double>>& samples);

// The median of values (0 when there are none).
double medianOf(std::vector<double> values);

}  // namespace weft::tune
