// run_task_pair (rl/cpu_task_pair.hpp): both tasks run once, on the caller alone or with the helper thread,
// and a task that throws, on either thread, hands its exception to the caller after both are done; a caller
// that sleeps waiting for the helper's task is woken when it ends, and not before.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>

#include "rl/cpu_task_pair.hpp"

using surge::rl::run_task_pair;

namespace {

// What each task did. With `meet`, each task waits (a second at most) for the other to start, so that
// when the helper is running the two run at the same time, one of them on the helper's thread.
struct Pair {
  std::thread::id caller = std::this_thread::get_id();
  bool meet = false;
  bool throw_on_helper = false;  // throw from a task running on another thread than the caller's
  int throw_index = -1;          // throw from this task, wherever it runs
  std::atomic<int> runs[2] = {0, 0};
  std::atomic<int> started{0};
  std::atomic<bool> on_helper[2] = {false, false};
  std::chrono::milliseconds linger_on_helper{0};  // a task on another thread then takes this long
  std::atomic<bool> finished[2] = {false, false};

  static void task(void* self, int index) {
    Pair& pair = *static_cast<Pair*>(self);
    pair.runs[index].fetch_add(1);
    pair.started.fetch_add(1);
    const bool elsewhere = std::this_thread::get_id() != pair.caller;
    pair.on_helper[index] = elsewhere;
    if (pair.meet) {
      const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(1);
      while (pair.started.load() < 2 && std::chrono::steady_clock::now() < give_up) std::this_thread::yield();
    }
    if (index == pair.throw_index) throw std::runtime_error("task " + std::to_string(index));
    if (pair.throw_on_helper && elsewhere) throw std::runtime_error("helper task " + std::to_string(index));
    if (elsewhere) std::this_thread::sleep_for(pair.linger_on_helper);
    pair.finished[index] = true;
  }
};

std::string message_of(Pair& pair, bool helped) {
  try {
    run_task_pair(&Pair::task, &pair, helped);
  } catch (const std::runtime_error& error) {
    return error.what();
  }
  return "";
}

}  // namespace

TEST_CASE("run_task_pair runs each task once, with or without the helper", "[cpu_task_pair]") {
  for (const bool helped : {false, true}) {
    for (int repeat = 0; repeat < 50; ++repeat) {
      Pair pair;
      run_task_pair(&Pair::task, &pair, helped);
      CHECK(pair.runs[0] == 1);
      CHECK(pair.runs[1] == 1);
      if (!helped) CHECK_FALSE((pair.on_helper[0] || pair.on_helper[1]));
    }
  }
}

TEST_CASE("a task's exception reaches the caller once both tasks are done", "[cpu_task_pair]") {
  for (const bool helped : {false, true}) {
    for (const int index : {0, 1}) {
      Pair pair;
      pair.throw_index = index;
      CHECK(message_of(pair, helped) == "task " + std::to_string(index));
      CHECK(pair.runs[0] == 1);  // the other task ran all the same
      CHECK(pair.runs[1] == 1);
    }
  }
  SECTION("both throw: the first task's exception") {
    // Both throw only when task 1 runs on the helper (task 0 always throws); try until it has, so that the
    // check can tell the lower-numbered task's exception from the helper's or the last one thrown.
    bool both_threw = false;
    for (int attempt = 0; attempt < 20 && !both_threw; ++attempt) {
      Pair pair;
      pair.throw_index = 0;
      pair.throw_on_helper = true;
      pair.meet = true;
      const std::string message = message_of(pair, true);
      CHECK(message == "task 0");
      both_threw = pair.on_helper[1];
    }
    REQUIRE(both_threw);
  }
}

TEST_CASE("an exception thrown on the helper thread reaches the caller", "[cpu_task_pair]") {
  // The helper takes a task only when it is running; try until it has (a second's wait per try lets a
  // busy machine schedule it), and check every try on the way.
  bool helper_threw = false;
  for (int attempt = 0; attempt < 20 && !helper_threw; ++attempt) {
    Pair pair;
    pair.meet = true;
    pair.throw_on_helper = true;
    const std::string message = message_of(pair, true);
    CHECK(pair.runs[0] == 1);
    CHECK(pair.runs[1] == 1);
    if (pair.on_helper[0] || pair.on_helper[1]) {
      const int index = pair.on_helper[0] ? 0 : 1;
      CHECK(message == "helper task " + std::to_string(index));
      helper_threw = true;
    } else {
      CHECK(message.empty());
    }
  }
  REQUIRE(helper_threw);

  // And the helper serves the next pair as before.
  Pair after;
  after.meet = true;
  run_task_pair(&Pair::task, &after, true);
  CHECK(after.runs[0] == 1);
  CHECK(after.runs[1] == 1);
}

TEST_CASE("a caller waiting for the helper's task returns once it has ended", "[cpu_task_pair]") {
  // The helper's task outlasts the caller's spin by far, so the caller sleeps on the done count; it must be
  // woken by the helper (else this test hangs) and only after that task finished. Try until the helper
  // has taken a task, as above.
  bool helper_ran = false;
  for (int attempt = 0; attempt < 20 && !helper_ran; ++attempt) {
    Pair pair;
    pair.meet = true;
    pair.linger_on_helper = std::chrono::milliseconds(30);
    run_task_pair(&Pair::task, &pair, true);
    CHECK(pair.finished[0]);
    CHECK(pair.finished[1]);
    helper_ran = pair.on_helper[0] || pair.on_helper[1];
  }
  REQUIRE(helper_ran);
}
