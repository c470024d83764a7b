#include "tools/bench/bench_report.hpp"

#include "sim/error.hpp"
#include "tools/cli/io.hpp"

namespace surge::cli {

std::string bench_what(const Command& cmd) {
  const std::string what = cmd.get("what");
  if (what != "env" && what != "train")
    throw InputError(cmd.complaint("--what '" + what + "' is not one of env, train"));
  return what;
}

std::string bench_mode(const Command& cmd) {
  const std::string mode = cmd.get("mode");
  if (mode != "fused" && mode != "step")
    throw InputError(cmd.complaint("--mode '" + mode + "' is not one of fused, step"));
  return mode;
}

void require_creatable(const std::string& path, const std::string& what) {
  require_writable(path, what);
  const AtomicFile probe(path);  // its temporary is removed again: nothing is left behind
}

std::string command_line(const std::string& command, const Args& args) {
  std::string line = command;
  for (const std::string& a : args) line += " " + a;
  return line;
}

ReportFiles::ReportFiles(const Command& cmd)
    : json_path_(cmd.has("json") ? cmd.get("json") : ""), svg_path_(cmd.has("svg") ? cmd.get("svg") : "") {
  if (!json_path_.empty()) require_creatable(json_path_, "JSON report");
  if (!svg_path_.empty()) require_creatable(svg_path_, "SVG figure");
}

void ReportFiles::write(const std::function<std::string()>& render_json,
                        const std::function<std::string()>& render_svg) const {
  const std::string json = json_path_.empty() ? "" : render_json();
  const std::string svg = svg_path_.empty() ? "" : render_svg();
  if (!json_path_.empty()) write_atomically(json_path_, json);
  if (!svg_path_.empty()) write_atomically(svg_path_, svg);
}

}  // namespace surge::cli
