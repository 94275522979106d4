// The pipelined description stream around the bootstrap ring, on socket pairs: every rank ends
// with every description whatever their sizes (empty, larger than a socket buffer, a mix), and
// a description over the limit or a neighbour that leaves is an error naming the neighbour.
#include "bootstrap/description_stream.h"

#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <catch2/catch.hpp>
#include <string>
#include <thread>
#include <vector>

namespace weft::bootstrap {
namespace {

// links[r] joins rank r (its next side, [0]) to rank r+1 (its prev side, [1]).
struct Ring {
  explicit Ring(int n) : links(n) {
    for (auto& link : links) {
      REQUIRE(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, link.data()) == 0);
    }
  }
  ~Ring() {
    for (auto& link : links) {
      for (int fd : link) {
        if (fd >= 0) close(fd);
      }
    }
  }
  RingNeighbours of(int rank) const {
    const int n = static_cast<int>(links.size());
    return {rank, n, links[rank][0], links[(rank - 1 + n) % n][1]};
  }
  std::vector<std::array<int, 2>> links;
};

std::string descriptionOf(int rank, size_t bytes) {
  std::string text(bytes, '\0');
  for (size_t i = 0; i < bytes; ++i) text[i] = static_cast<char>('a' + (rank * 7 + i) % 26);
  return text;
}

}  // namespace

TEST_CASE("every rank gets every description, whatever their sizes", "[bootstrap][stream]") {
  const int n = GENERATE(2, 3, 7, 64);
  // Sizes cycle through empty, small, and larger than the socket buffers.
  const std::vector<size_t> sizes = {0, 17, 300 * 1024, 1, 4096};
  CAPTURE(n);
  Ring ring(n);
  std::vector<std::vector<std::string>> seen(n, std::vector<std::string>(n));
  std::vector<Status> results(n);
  std::vector<std::thread> threads;
  for (int rank = 0; rank < n; ++rank) {
    seen[rank][rank] = descriptionOf(rank, sizes[rank % sizes.size()]);
    threads.emplace_back([&, rank] {
      results[rank] =
          streamDescriptions(ring.of(rank), 1 << 20, Deadline::after(30000), &seen[rank]);
    });
  }
  for (auto& thread : threads) thread.join();
  for (int rank = 0; rank < n; ++rank) {
    INFO("rank " << rank << ": " << results[rank].message());
    REQUIRE(results[rank].isOk());
    for (int origin = 0; origin < n; ++origin) {
      CHECK(seen[rank][origin] == descriptionOf(origin, sizes[origin % sizes.size()]));
    }
  }
}

TEST_CASE("a description over the limit is refused, naming the neighbour that sent it",
          "[bootstrap][stream]") {
  Ring ring(2);
  std::vector<std::vector<std::string>> seen(2, std::vector<std::string>(2));
  seen[0][0] = std::string(100, 'x');
  seen[1][1] = "small";
  Status results[2];
  std::thread other(
      [&] { results[1] = streamDescriptions(ring.of(1), 64, Deadline::after(5000), &seen[1]); });
  results[0] = streamDescriptions(ring.of(0), 64, Deadline::after(5000), &seen[0]);
  other.join();
  CHECK(results[0].isOk());
  CHECK(results[1].code() == weftRemoteError);
  CHECK(results[1].message() == "rank 0 forwarded a 100-byte description for rank 0 (at most 64)");
}

TEST_CASE("a neighbour that leaves mid-stream is an error naming it", "[bootstrap][stream]") {
  Ring ring(3);
  // Rank 2 never takes part: it closes both of its sides.
  close(ring.links[2][0]);
  ring.links[2][0] = -1;
  close(ring.links[1][1]);
  ring.links[1][1] = -1;
  std::vector<std::string> mine(3);
  mine[0] = "zero";
  Status result = streamDescriptions(ring.of(0), 64, Deadline::after(5000), &mine);
  CHECK(result.code() == weftRemoteError);
  CHECK(result.message() == "rank 2 closed the connection");
}

}  // namespace weft::bootstrap
