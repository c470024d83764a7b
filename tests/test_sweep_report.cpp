// The sweep's JSON report and SVG figure, rendered from a synthetic sweep whose knee and
// recommendation are known: fields and values in the JSON, and in the SVG the points, the ticks and
// the knee where the log-log mapping puts them. (Well-formedness of the XML is checked by
// tests/support/check_throughput_outputs.py with an independent parser.)
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <cmath>
#include <string>

#include "tools/bench/svg_chart.hpp"
#include "tools/bench/sweep_report.hpp"

using namespace surge::throughput;

namespace {

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// N = 2^10 .. 2^17 on t(N) = 10 us + N / 1e9 per step of the batch.
SweepResult synthetic_sweep() {
  SweepResult r;
  r.what = "env";
  r.scenario = "cartpole";
  r.device = "cuda:0";
  r.mode = "fused";
  r.from = 1024;
  r.to = 131072;
  r.min_env_steps = 1 << 20;
  r.repeats = 3;
  r.command = "surge bench sweep --what env --device cuda --from 1024 --to 131072";
  for (int p = 10; p <= 17; ++p) {
    const double n = std::ldexp(1.0, p);
    const double rate = n / (1e-5 + n / 1e9);
    r.points.push_back({static_cast<std::int64_t>(n),
                        128,
                        4,
                        {0.99 * rate, rate, 1.01 * rate},
                        rate,
                        static_cast<std::size_t>(n) * 3000});
  }
  r.stop = SweepStop::Saturated;
  r.stop_detail = "the doubling from 65536 to 131072 gained 1.07x, under 1.1x";
  r.memory_known = true;
  r.free_bytes = std::size_t(80) << 30;
  r.memory_source = "cudaMemGetInfo on cuda:0";
  r.analysis = analyse_scaling(scaling_points(r.points), r.rule);
  return r;
}

}  // namespace

TEST_CASE("the synthetic sweep has the knee and recommendation the model implies") {
  const SweepResult r = synthetic_sweep();
  // Gain 2 (N + 10^4) / (2N + 10^4) is under 1.1 once N > 45000: 1.1324 from 32768, 1.0709 from 65536.
  REQUIRE(r.analysis.knee.has_value());
  CHECK(r.points[*r.analysis.knee].num_envs == 65536);
  // Best 131072 / 141.072 us = 9.291e8; 90% = 8.362e8: 65536 gives 8.676e8, 32768 gives 7.662e8.
  CHECK(r.points[r.analysis.recommended].num_envs == 65536);
}

TEST_CASE("the sweep JSON holds every point and the analysis") {
  const SweepResult r = synthetic_sweep();
  const auto json = nlohmann::json::parse(sweep_json(r, "0.1.0"));
  CHECK(json["benchmark"] == "sweep");
  CHECK(json["what"] == "env");
  CHECK(json["device"] == "cuda:0");
  CHECK(json["from"] == 1024);
  CHECK(json["min_gain"].get<double>() == Approx(1.1));
  REQUIRE(json["points"].size() == r.points.size());
  CHECK(json["points"][0]["gain_from_previous"].is_null());
  for (std::size_t k = 0; k < r.points.size(); ++k) {
    const auto& p = json["points"][k];
    CHECK(p["num_envs"] == r.points[k].num_envs);
    CHECK(p["env_steps_per_s"].get<double>() == Approx(r.points[k].rate).epsilon(1e-9));
    CHECK(p["ns_per_env_step"].get<double>() == Approx(1e9 / r.points[k].rate).epsilon(1e-9));
    CHECK(p["env_steps_per_s_runs"].size() == 3);
    CHECK(p["device_bytes"] == r.points[k].num_envs * 3000);
    if (k) CHECK(p["gain_from_previous"].get<double>() == Approx(r.analysis.gains[k - 1]).epsilon(1e-9));
  }
  CHECK(json["stop"] == "saturated");
  CHECK(json["knee"]["num_envs"] == 65536);
  CHECK(json["best"]["num_envs"] == 131072);
  CHECK(json["recommended_num_envs"] == 65536);
  CHECK(json["model"]["valid"] == true);
  CHECK(json["model"]["peak_env_steps_per_s"].get<double>() == Approx(1e9).epsilon(1e-6));
  CHECK(json["model"]["half_rate_num_envs"].get<double>() == Approx(1e4).epsilon(1e-6));
  CHECK(json["memory"]["free_bytes"] == std::int64_t(80) << 30);
}

TEST_CASE("the sweep JSON writes null for a missing knee and unknown memory") {
  SweepResult r = synthetic_sweep();
  r.points.resize(3);
  r.analysis = analyse_scaling(scaling_points(r.points), r.rule);
  r.memory_known = false;
  const auto json = nlohmann::json::parse(sweep_json(r, "0.1.0"));
  CHECK(json["knee"].is_null());
  CHECK(json["memory"]["free_bytes"].is_null());
  CHECK(json["recommended_num_envs"] == 4096);
}

TEST_CASE("the sweep figure places points, ticks and the knee on log-log axes") {
  const SweepResult r = synthetic_sweep();
  const std::string svg = sweep_svg(r);
  CHECK(svg.rfind("<?xml", 0) == 0);
  CHECK(svg.find("</svg>") != std::string::npos);
  CHECK(count(svg, "r=\"3\"") == r.points.size());  // one dot per measured point
  // x spans 2^10 .. 2^17 over 640 px from x = 90.
  for (int p = 10; p <= 17; ++p)
    CHECK(svg.find(">2<tspan dy=\"-7\" font-size=\"10\">" + std::to_string(p) + "</tspan>") != std::string::npos);
  // The knee is also the recommendation: one marker, at 2^16, x = 90 + 640 * 6 / 7 = 638.57.
  CHECK(svg.find("knee and recommended --num-envs: 65536 (2^16)") != std::string::npos);
  CHECK(svg.find("<circle cx=\"638.57\"") != std::string::npos);
  // Rates 9.3e7 .. 9.3e8 span 10^7 .. 10^9: both decades labelled.
  CHECK(svg.find(">10<tspan dy=\"-7\" font-size=\"10\">7</tspan>") != std::string::npos);
  CHECK(svg.find(">10<tspan dy=\"-7\" font-size=\"10\">9</tspan>") != std::string::npos);
  CHECK(svg.find(r.command) != std::string::npos);
}

TEST_CASE("a chart spanning under two decades labels 2x and 5x ticks too, and text is escaped") {
  LogLogChart chart("a <small> & \"quoted\" chart", {"x", TickStyle::PowersOfTen}, {"y", TickStyle::PowersOfTen});
  chart.add(ChartSeries{"s", {{1.5, 2.0}, {3.0, 8.0}}});
  const std::string svg = chart.svg();
  CHECK(svg.find("a &lt;small&gt; &amp; &quot;quoted&quot; chart") != std::string::npos);
  CHECK(svg.find(">2\u00d710<tspan dy=\"-7\" font-size=\"10\">0</tspan>") != std::string::npos);
  CHECK(svg.find(">5\u00d710<tspan dy=\"-7\" font-size=\"10\">0</tspan>") != std::string::npos);
  CHECK(xml_escape("a'b\x01") == "a&apos;b ");
}

TEST_CASE("labels of markers at the same place are moved apart") {
  LogLogChart chart("t", {"x", TickStyle::PowersOfTen}, {"y", TickStyle::PowersOfTen});
  chart.add(ChartMarker{{10.0, 10.0}, "first label"}).add(ChartMarker{{10.0, 10.0}, "second label"});
  const std::string svg = chart.svg();
  auto baseline = [&](const std::string& label) {
    const std::size_t text = svg.rfind("<text", svg.find(">" + label + "</text>"));
    const std::size_t y = svg.find(" y=\"", text) + 4;
    return std::stod(svg.substr(y, svg.find('"', y) - y));
  };
  // The first keeps its place 10 px above the marker; the second moves at least a line (14 px) up or
  // down, to where it stays inside the frame (the marker sits on its bottom corner).
  CHECK(std::abs(baseline("second label") - baseline("first label")) >= 14.0);
}

TEST_CASE("a long subtitle is broken at a space into two lines") {
  LogLogChart chart("t", {"x", TickStyle::PowersOfTwo}, {"y", TickStyle::PowersOfTen});
  chart.add(ChartSeries{"s", {{1.0, 1.0}, {2.0, 2.0}}});
  std::string command = "surge bench sweep";
  while (command.size() < 150) command += " --option value";
  chart.subtitle(command);
  const std::string svg = chart.svg();
  const std::size_t cut = command.rfind(' ', 115);
  CHECK(svg.find(">" + command.substr(0, cut) + "</text>") != std::string::npos);
  CHECK(svg.find(">" + command.substr(cut + 1) + "</text>") != std::string::npos);
}

TEST_CASE("a chart refuses points it cannot place on log axes") {
  LogLogChart chart("t", {"x", TickStyle::PowersOfTwo}, {"y", TickStyle::PowersOfTen});
  CHECK_THROWS(chart.svg());  // nothing to draw
  chart.add(ChartSeries{"s", {{1.0, 0.0}}});
  CHECK_THROWS(chart.svg());
}
