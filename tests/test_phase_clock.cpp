// The phase clock charges the time between consecutive marks to the phase that just ended. On the
// CPU backend work runs as it is enqueued, so host sleeps stand in for phases of known length; only
// lower bounds and the attribution are checked, never a speed.
#include <catch2/catch.hpp>

#include <chrono>
#include <thread>

#include "sim/phase_clock.hpp"

using namespace surge;

TEST_CASE("each interval is charged to the phase named at its end") {
  Stream stream(Device::cpu());
  PhaseClock clock(stream, 3);
  auto sleep_ms = [](int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); };
  clock.start();
  sleep_ms(30);
  clock.lap(2);
  sleep_ms(10);
  clock.lap(0);
  sleep_ms(20);
  clock.lap(2);
  CHECK(clock.laps() == 3);
  const auto seconds = clock.seconds();
  REQUIRE(seconds.size() == 3);
  CHECK(seconds[0] >= 0.010);
  CHECK(seconds[1] == 0.0);    // never named
  CHECK(seconds[2] >= 0.050);  // two intervals, 30 + 20 ms
  CHECK_THROWS(clock.lap(3));
  CHECK_THROWS(clock.start());
}
