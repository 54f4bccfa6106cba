// oracle/capture.cpp — Oracle::capture: the reference captured as an operator graph by
// src/oracle/capture.py (torch.export, Core ATen; docs/graph-format.md), cached per definition and
// capture code under cache_root()/graphs/<key>, successes and clean failures alike.
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>

#include <spdlog/spdlog.h>

#include "oracle/oracle.h"
#include "util/error.h"
#include "util/files.h"
#include "util/hash.h"
#include "util/process.h"
#include "util/resources.h"

namespace ka {
namespace {

using json = nlohmann::json;
constexpr const char* kCaptureFiles[] = {"capture.py", "capture_graph.py", "capture_inputs.py", "capture_decomp.py"};
constexpr const char* kResultFile = "result.json";  // the script's result line, captured or not

std::string capture_python() {
  if (const char* p = std::getenv("KERNELARC_PYTHON"); p && *p) return p;
  return "python3";
}

// The cached result in dir, or null when there is none (or it cannot be read).
json read_result(const fs::path& dir) {
  if (!fs::exists(dir / kResultFile)) return nullptr;
  json j = json::parse(read_text(dir / kResultFile), nullptr, false);
  return j.is_object() ? j : json(nullptr);
}

// Moves a finished capture folder into the cache; a folder already there (another process
// captured the same definition meanwhile) is kept and ours dropped.
void publish(const fs::path& work, const fs::path& dst) {
  for (const auto& e : fs::directory_iterator(work)) ::chmod(e.path().c_str(), 0444);
  ::chmod(work.c_str(), 0555);
  if (::renameat2(AT_FDCWD, work.c_str(), AT_FDCWD, dst.c_str(), RENAME_NOREPLACE) == 0) return;
  if (errno != EEXIST && errno != ENOTEMPTY)
    throw std::runtime_error(fmt::format("cannot move the captured graph into the cache: {}", std::strerror(errno)));
  ::chmod(work.c_str(), 0755);
  for (const auto& e : fs::directory_iterator(work)) ::chmod(e.path().c_str(), 0644);
  fs::remove_all(work);
}

}  // namespace

std::string Oracle::capture_version() {
  static const std::string v = [] {
    std::string src = version();
    for (const char* f : kCaptureFiles) src += sha256_hex(read_text(resource_path(std::string("src/oracle/") + f)));
    return sha256_hex(src).substr(0, 16);
  }();
  return v;
}

std::string Oracle::capture_key(const Problem& p, const Workload* shape_of) const {
  if (shape_of)
    return sha256_hex(fmt::format("capture-static\n{}\n{}\n{}\n", p.def.hash, capture_version(), shape_of->shape_binding())).substr(0, 40);
  return sha256_hex(fmt::format("capture\n{}\n{}\n", p.def.hash, capture_version())).substr(0, 40);
}

CaptureResult Oracle::capture(const Problem& p, const Workload* shape_of) const {
  const fs::path root = root_.parent_path() / "graphs";
  fs::create_directories(root);
  CaptureResult out;
  out.dir = root / capture_key(p, shape_of);
  if (json cached = read_result(out.dir); !cached.is_null()) {
    out.summary = std::move(cached);
    out.captured = out.summary.value("captured", false) && fs::exists(out.dir / "graph.json");
    out.cached = true;
    return out;
  }
  const fs::path work = make_temp_dir((root / "tmp-").string());
  std::vector<std::string> cmd{capture_python(), resource_path("src/oracle/capture.py").string(), "--spec",
                               fs::absolute(spec_file(p)).string(), "-o", work.string()};
  if (shape_of) {
    cmd.insert(cmd.end(), {"--workload", shape_of->uuid, "--static"});
    spdlog::info("oracle: capturing the reference of {} at the shapes of workload {} as an operator graph", p.def.name, shape_of->line);
  } else {
    spdlog::info("oracle: capturing the reference of {} as an operator graph", p.def.name);
  }
  const RunResult rr = run_command(cmd, std::min<std::chrono::milliseconds>(time_limit(), std::chrono::minutes(15)));
  std::string last;  // the result line: the last line of the output that is a JSON object
  for (size_t end = rr.output.size(); end > 0 && last.empty();) {
    const size_t start = rr.output.rfind('\n', end - 1);
    const size_t from = start == std::string::npos ? 0 : start + 1;
    if (rr.output.compare(from, 1, "{") == 0) last = rr.output.substr(from, end - from);
    end = start == std::string::npos ? 0 : start;
  }
  json result = last.empty() ? json() : json::parse(last, nullptr, false);
  if (rr.exit_code == 2 && !rr.timed_out && rr.signal == 0) {
    fs::remove_all(work);
    user_error("capture: {}", one_line(rr.output.substr(rr.output.size() > 400 ? rr.output.size() - 400 : 0)));
  }
  if (rr.exit_code == 4 && !rr.timed_out && rr.signal == 0 && result.is_object()) {  // not for now: not cached
    fs::remove_all(work);
    out.summary = std::move(result);
    out.transient = true;
    return out;
  }
  const bool clean = !rr.timed_out && rr.signal == 0 && (rr.exit_code == 0 || rr.exit_code == 3) && result.is_object();
  if (!clean) {  // not cached: a later call tries again
    fs::remove_all(work);
    out.transient = true;
    const std::string why = rr.timed_out ? "it ran past its time limit"
                            : rr.signal  ? fmt::format("it ended on signal {}", rr.signal)
                                         : fmt::format("exit code {} without a result line", rr.exit_code);
    out.summary = {{"captured", false},
                   {"reason", fmt::format("capture failed ({}): {}", why,
                                          one_line(rr.output.substr(rr.output.size() > 400 ? rr.output.size() - 400 : 0)))},
                   {"op", nullptr},
                   {"source", nullptr}};
    return out;
  }
  write_atomic(work / kResultFile, result.dump(1));
  publish(work, out.dir);
  out.summary = read_result(out.dir);
  out.captured = out.summary.value("captured", false) && fs::exists(out.dir / "graph.json");
  return out;
}

}  // namespace ka
