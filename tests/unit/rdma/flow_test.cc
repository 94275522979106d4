#include "transports/rdma/rdma_flow.h"

#include <catch2/catch.hpp>
#include <cstdint>
#include <deque>
#include <random>

using weft::rdma::SendWindow;
using weft::rdma::SlotArrivals;
using weft::rdma::SlotCredits;

TEST_CASE("slot credits: a sender never has more than the ring in flight") {
  SlotCredits credits(4);
  for (uint32_t i = 0; i < 4; ++i) {
    REQUIRE(credits.available());
    CHECK(credits.nextSlot() == i);
    credits.wrote();
  }
  CHECK_FALSE(credits.available());
  CHECK_FALSE(credits.returned(5));  // more than in flight: refused, nothing changes
  CHECK(credits.inFlight() == 4);
  CHECK(credits.returned(2));
  CHECK(credits.available());
  CHECK(credits.nextSlot() == 0);  // the ring wrapped
}

TEST_CASE("slot arrivals: in order only, never more than the ring, credits at half") {
  SlotArrivals arrivals(8);
  CHECK_FALSE(arrivals.arrive(1));  // out of order
  for (uint32_t i = 0; i < 8; ++i) REQUIRE(arrivals.arrive(i));
  CHECK_FALSE(arrivals.arrive(0));  // a ninth before any return would overrun the ring
  for (int i = 0; i < 3; ++i) arrivals.consume();
  CHECK(arrivals.creditsDue() == 0);  // 3 of 8: not yet
  arrivals.consume();
  CHECK(arrivals.creditsDue() == 4);
  arrivals.sentCredits(4);
  CHECK(arrivals.unreturned() == 0);
  CHECK(arrivals.arrive(0));  // slot 0 again, after the wrap
}

TEST_CASE("credits and arrivals wrap around 2^32 without losing count") {
  const uint32_t start = 0xffffffffu - 5;
  SlotCredits credits(4, start);
  SlotArrivals arrivals(4, start);
  uint64_t moved = 0;
  for (int round = 0; round < 100; ++round) {
    while (credits.available()) {
      REQUIRE(arrivals.arrive(credits.nextSlot()));
      credits.wrote();
    }
    while (arrivals.pending()) arrivals.consume();
    uint32_t due = arrivals.creditsDue();
    REQUIRE(due == 4);
    REQUIRE(credits.returned(due));
    arrivals.sentCredits(due);
    moved += due;
  }
  CHECK(moved == 400);
  CHECK(credits.inFlight() == 0);
}

TEST_CASE("credit scheme moves a random workload without deadlock or overrun") {
  // A sender and a receiver exchange slots through a modelled wire that delivers writes in
  // order; the receiver consumes at random moments. Invariant: never more than the ring is
  // outstanding, and everything written arrives and is consumed.
  std::mt19937 random(7);
  for (uint32_t slots : {2u, 3u, 16u}) {
    SlotCredits credits(slots);
    SlotArrivals arrivals(slots);
    std::deque<uint32_t> wire;
    std::deque<uint32_t> creditWire;
    uint64_t written = 0, consumed = 0;
    const uint64_t total = 5000;
    int idle = 0;
    while (consumed < total) {
      bool moved = false;
      if (written < total && credits.available() && random() % 2) {
        wire.push_back(credits.nextSlot());
        credits.wrote();
        ++written;
        moved = true;
      }
      if (!wire.empty() && random() % 2) {
        REQUIRE(arrivals.arrive(wire.front()));
        wire.pop_front();
        moved = true;
      }
      if (arrivals.pending() && random() % 3 == 0) {
        arrivals.consume();
        ++consumed;
        moved = true;
      }
      if (uint32_t due = arrivals.creditsDue()) {
        creditWire.push_back(due);
        arrivals.sentCredits(due);
      }
      if (!creditWire.empty() && random() % 2) {
        REQUIRE(credits.returned(creditWire.front()));
        creditWire.pop_front();
        moved = true;
      }
      REQUIRE(credits.inFlight() <= slots);
      idle = moved ? 0 : idle + 1;
      REQUIRE(idle < 1000);  // stuck: the scheme deadlocked
    }
    CHECK(written == total);
  }
}

TEST_CASE("send window: selective signalling keeps room and retires in order") {
  SendWindow window(8);
  int signalled = 0;
  uint32_t lastSignalled = 0;
  for (int i = 0; i < 8; ++i) {
    REQUIRE(window.room());
    bool flag = false;
    uint32_t n = window.post(false, &flag);
    if (flag) {
      ++signalled;
      lastSignalled = n;
    }
  }
  CHECK(signalled == 4);  // every depth/4
  CHECK_FALSE(window.room());
  CHECK_FALSE(window.completed(9));  // never posted
  REQUIRE(window.completed(lastSignalled));
  CHECK(window.outstanding() == 0);
  CHECK_FALSE(window.completed(lastSignalled - 2));  // older than what was retired
  bool flag = false;
  window.post(true, &flag);
  CHECK(flag);  // forced
  CHECK(window.room(7));
  CHECK_FALSE(window.room(8));
}

TEST_CASE("send window wraps around 2^32") {
  SendWindow window(4, 0xffffffffu - 1);
  bool flag = false;
  uint32_t a = window.post(false, &flag);
  uint32_t b = window.post(true, &flag);
  CHECK(a == 0xffffffffu);
  CHECK(b == 0);
  CHECK(window.outstanding() == 2);
  REQUIRE(window.completed(b));
  CHECK(window.outstanding() == 0);
}
