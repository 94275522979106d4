// The node layout from host identities: any numbering, uneven nodes.
#include <catch2/catch.hpp>

#include <string>

#include "topo/node_layout.h"

namespace weft::topo {
namespace {

NodeLayout fromLetters(const std::string& letters) {
  std::vector<uint64_t> hostIds;
  for (char letter : letters) hostIds.push_back(static_cast<uint64_t>(letter) * 7919);
  return buildNodeLayout(hostIds);
}

}  // namespace

TEST_CASE("interleaved ranks form nodes in order of their lowest rank", "[topo]") {
  NodeLayout layout = fromLetters("ABAB");
  CHECK(layout.nodes() == 2);
  CHECK(layout.nodeRanks[0] == std::vector<int>{0, 2});
  CHECK(layout.nodeRanks[1] == std::vector<int>{1, 3});
  CHECK(layout.localIndexOf == std::vector<int>{0, 0, 1, 1});
  CHECK(layout.leaderOf(1) == 1);
  CHECK_FALSE(layout.numberedByNode());
  CHECK(layout.localRankAcrossNodes(1) == std::vector<int>{2, 3});
  CHECK(layout.summary() == "4 ranks on 2 nodes, 2 per node, numbered across nodes");
}

TEST_CASE("uneven, scattered nodes", "[topo]") {
  NodeLayout layout = fromLetters("BAABC");
  CHECK(layout.nodes() == 3);
  CHECK(layout.nodeRanks[0] == std::vector<int>{0, 3});  // B comes first: it holds rank 0
  CHECK(layout.nodeRanks[1] == std::vector<int>{1, 2});
  CHECK(layout.nodeRanks[2] == std::vector<int>{4});
  CHECK(layout.minPerNode() == 1);
  CHECK(layout.maxPerNode() == 2);
  CHECK_FALSE(layout.uniform());
  CHECK(layout.localRankAcrossNodes(1) == std::vector<int>{3, 2});
  CHECK(layout.summary() == "5 ranks on 3 nodes, 1 to 2 per node, numbered across nodes");
}

TEST_CASE("described layouts match their host-identity equivalents", "[topo]") {
  CHECK(describedNodeLayout(2, 3, false).nodeOf == fromLetters("AAABBB").nodeOf);
  CHECK(describedNodeLayout(2, 3, true).nodeOf == fromLetters("ABABAB").nodeOf);
  CHECK(describedNodeLayout(2, 3, false).numberedByNode());
  CHECK(describedNodeLayout(1, 1, false).summary() == "1 rank on 1 node, 1 per node");
}

}  // namespace weft::topo
