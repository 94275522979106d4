// Deciding a measured cell fairly. A few rounds of timings on a busy machine can crown a
// candidate by a fluke: one quiet round, or a noisy one for the rival. When the rivals' timings
// overlap, the cell is not decided yet, and `weft_tune measure` gives those candidates more
// rounds before it writes a rule.
#pragma once

#include <cstddef>
#include <vector>

namespace weft::tune {

// samples[i]: candidate i's timings over the rounds so far (empty: not timed). The leader is the
// candidate with the lowest median; its contenders are those whose range of timings [fastest,
// slowest] overlaps the leader's. Returns the leader's index followed by its contenders', or an
// empty list when no other candidate overlaps the leader (the cell is decided).
std::vector<size_t> closeContenders(const std::vector<std::vector<double>>& samples);

// The median of values (0 when there are none).
double medianOf(std::vector<double> values);

}  // namespace weft::tune
