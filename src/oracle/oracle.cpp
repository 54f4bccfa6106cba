// oracle/oracle.cpp — running the Python oracle and managing its read-only cache.
#include "oracle/oracle.h"

#include <spdlog/spdlog.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>

#include <algorithm>
#include <cstdlib>
#include <csignal>
#include <fstream>
#include <future>
#include <map>
#include <mutex>
#include <thread>

#include <fmt/ranges.h>

#include "util/error.h"
#include "util/files.h"
#include "util/hash.h"
#include "util/process.h"
#include "oracle/spec.h"
#include "util/resources.h"

namespace ka {
namespace {

using json = nlohmann::json;
const char* kFiles[] = {"inputs.safetensors", "reference.safetensors", "meta.json"};

std::string python() {
  if (const char* p = std::getenv("KERNELARC_PYTHON"); p && *p) return p;
  return "python3";
}

// Linux's estimate of the memory available to new work (MemAvailable), 0 where unknown.
uint64_t mem_available_bytes() {
  std::ifstream f("/proc/meminfo");
  std::string line;
  unsigned long long kb = 0;
  while (std::getline(f, line))
    if (std::sscanf(line.c_str(), "MemAvailable: %llu kB", &kb) == 1) return static_cast<uint64_t>(kb) * 1024;
  return 0;
}

// How many oracle processes to run at once over these workloads: `want` (the environment variable
// `env`, when set to a positive number, instead), at most one per core and one per workload, and no
// more than the available memory holds at 8x the largest workload's inputs per process (a process
// holds a workload's inputs, their clones and the reference's upcasts: 020's fp8 experts took
// ~12 GB, 8.5x its 1.4 GB of inputs).
size_t process_count(const Problem& p, const std::vector<const Workload*>& ws, size_t want, const char* env) {
  if (const char* e = std::getenv(env); e && std::atoi(e) > 0) want = static_cast<size_t>(std::atoi(e));
  size_t n = std::min({want, ws.size(), static_cast<size_t>(std::max(1u, std::thread::hardware_concurrency()))});
  size_t largest = 0;
  for (const Workload* w : ws) {
    size_t bytes = 0;
    for (const auto& t : p.def.inputs) {
      int64_t k = 1;
      for (int64_t d : resolve_shape(t, *w)) k *= d;
      bytes += dtype_storage_bytes(t.dtype, k);
    }
    largest = std::max(largest, bytes);
  }
  if (const uint64_t avail = mem_available_bytes(); avail > 0 && largest > 0)
    n = std::clamp<size_t>(static_cast<size_t>(avail / (8 * static_cast<uint64_t>(largest))), 1, n);
  return std::max<size_t>(n, 1);
}

// The last lines of a failed oracle run's output, as one line for an error message.
std::string output_tail(const RunResult& rr) {
  return one_line(rr.output.size() > 600 ? rr.output.substr(rr.output.size() - 600) : rr.output);
}

void make_read_only(const fs::path& dir) {
  for (const auto& e : fs::directory_iterator(dir)) ::chmod(e.path().c_str(), 0444);
  ::chmod(dir.c_str(), 0555);
}

}  // namespace

std::optional<double> OracleEntry::reference_ms() const {
  if (meta.contains("reference_ms") && meta["reference_ms"].is_number()) return meta["reference_ms"].get<double>();
  return std::nullopt;
}

std::optional<double> OracleEntry::compile_ms() const {
  if (meta.contains("compile_ms") && meta["compile_ms"].is_number()) return meta["compile_ms"].get<double>();
  return std::nullopt;
}

// The oracle's Python: the command line and its package. Every file's text, and the format of the
// spec it is given, make up the oracle's version, part of every cache key.
constexpr const char* kOracleFiles[] = {
    "kernelarc_oracle.py",        "kaoracle/__init__.py",       "kaoracle/common.py", "kaoracle/spec.py",
    "kaoracle/safetensors_io.py", "kaoracle/inputs.py",         "kaoracle/reference.py",
    "kaoracle/timing.py",         "kaoracle/compile_baseline.py", "kaoracle/work_count.py", "kaoracle/jobs.py",
    "kaoracle/scaled_mm.py"};

std::string OracleEntry::compile_note() const {
  if (meta.contains("compile_note") && meta["compile_note"].is_string()) return meta["compile_note"].get<std::string>();
  return {};
}

std::string Oracle::version() {
  static const std::string v = [] {
    std::string src = kOracleSpecFormat;
    for (const char* f : kOracleFiles) src += "\n" + sha256_hex(read_text(resource_path(std::string("src/oracle/") + f)));
    return sha256_hex(src).substr(0, 16);
  }();
  return v;
}

std::filesystem::path Oracle::spec_file(const Problem& p) const { return write_oracle_spec(p, root_.parent_path() / "specs"); }

// The long-lived regeneration process of load_inputs() (src/oracle/kernelarc_regen_serve.py): one
// request line (JSON) in, one reply line out. Restarted for another problem, and after it died, hung
// or answered garbage (its state is then unknown); a request it reports as failed leaves it running.
struct Oracle::RegenServer {
  std::mutex mu;
  Child child;
  fs::path spec;  // the spec of the problem it serves
  fs::path log;
};

Oracle::Oracle(std::string device, fs::path cache_dir)
    : regen_(std::make_shared<RegenServer>()), device_(std::move(device)), root_(std::move(cache_dir)) {
  if (root_.empty()) root_ = cache_root() / "oracle";
  fs::create_directories(root_);
}

namespace {
std::string entry_key(const Problem& p, const Workload& w, uint64_t seed, const std::string& device) {
  std::string src = fmt::format("{}\n{}\n{}\n{}\n{}\n", p.def.hash, w.raw.dump(), seed, Oracle::version(), device);
  for (const auto& [name, in] : w.inputs)
    if (in.kind == InputSource::Safetensors) src += name + ":" + sha256_file(p.dir / in.path) + "\n";
  return sha256_hex(src).substr(0, 40);
}
}  // namespace

std::string Oracle::key(const Problem& p, const Workload& w, uint64_t seed) const { return entry_key(p, w, seed, device_); }
std::string Oracle::count_key(const Problem& p, const Workload& w) const { return entry_key(p, w, 0, "any device"); }

namespace {
// Whether meta (an entry's meta.json) holds what a timed request asks: tr, the eager reference's
// time; tc, torch.compile's, or a compile timing that records why there is none (not a skip for
// want of budget, which a later run redoes).
bool has_timings(const json& meta, bool tr, bool tc) {
  if (tr && !(meta.contains("reference_ms") && meta["reference_ms"].is_number())) return false;
  if (!tc) return true;
  if (meta.contains("compile_ms") && meta["compile_ms"].is_number()) return true;
  if (!meta.contains("compile_timing")) return false;
  const json& ct = meta["compile_timing"];
  return !ct.is_null() && !(ct.is_object() && ct.contains("skipped"));
}
}  // namespace

json Oracle::borrowed_timings(const std::string& key, bool tr, bool tc) const {
  if (timings_device_.empty() || !(tr || tc)) return nullptr;
  const fs::path dir = root_.parent_path() / "oracle-timings" / key;
  if (!fs::exists(dir / "manifest.json") || !fs::exists(dir / "meta.json")) return nullptr;
  json meta = json::parse(read_text(dir / "meta.json"), nullptr, false);
  if (!meta.is_object() || meta.value("device_name", std::string()) != timings_device_ || !has_timings(meta, tr, tc))
    return nullptr;
  json out = json::object();  // only what is asked: a compile timing must not become a baseline unasked
  for (const char* f : {"reference_ms", "reference_timing"})
    if (tr && meta.contains(f)) out[f] = meta[f];
  for (const char* f : {"compile_ms", "compile_timing", "compile_note"})
    if (tc && meta.contains(f)) out[f] = meta[f];
  out["timings_from"] = {{"cache", "oracle-timings"},
                         {"key", key},
                         {"device_name", meta.value("device_name", std::string())},
                         {"torch", meta.value("torch", std::string())}};
  return out;
}

namespace {

// One oracle run of ensure(): makes the missing entries of one group (timed or untimed) and
// publishes them into the cache.
struct GroupRun {
  const Problem& p;
  const std::vector<OracleRequest>& reqs;
  const std::vector<std::string>& keys;
  const std::vector<json>& borrowed;
  const fs::path& root;
  const std::string& device;
  const fs::path& spec;  // the problem's spec (Oracle::spec_file)
  double compile_budget_s, time_limit_s;
  bool timings_only;
  std::vector<OracleEntry>& out;

  void run(const std::vector<size_t>& missing, bool tr, bool tc, std::chrono::milliseconds left);
  // The oracle's command per process (the jobs are added by run()).
  std::vector<std::vector<std::string>> commands(const std::vector<size_t>& missing, bool tr, bool tc) const;
  // Why each process stopped early ("" for those that finished); UserError for a user's fault.
  std::vector<std::string> stop_reasons(const std::vector<RunResult>& results, const fs::path& work, size_t done,
                                        size_t missing) const;
  // The finished job of request i: checked, made read-only and moved into the cache.
  void publish(size_t i, const fs::path& job);
};

std::vector<std::vector<std::string>> GroupRun::commands(const std::vector<size_t>& missing, bool tr, bool tc) const {
  // The untimed sets are made by several oracle processes at once (round robin, so large and small
  // workloads mix): their cost is the host's (hashing and writing the inputs, Python), and nothing
  // is timed while they run. The timed group stays one process, alone on the device, so that the
  // reference's timing is not disturbed. KERNELARC_ORACLE_PROCS sets the number (default: 4 on
  // cuda, 1 on cpu, where the references themselves take the cores).
  size_t shards = 1;
  if (!tr && !tc) {
    std::vector<const Workload*> ws;
    for (size_t i : missing) ws.push_back(reqs[i].workload);
    shards = process_count(p, ws, device == "cuda" ? 4 : 1, "KERNELARC_ORACLE_PROCS");
  }
  std::vector<std::vector<std::string>> cmds(shards);
  for (auto& cmd : cmds) {
    cmd = {python(), resource_path("src/oracle/kernelarc_oracle.py").string(), "generate", "--spec",
           fs::absolute(spec).string(), "--device", device};
    if (tr) cmd.push_back("--time-reference");
    if (timings_only) cmd.push_back("--timings-only");
    if (tc) {
      cmd.push_back("--time-compile");
      cmd.push_back("--compile-budget");
      cmd.push_back(fmt::format("{}", compile_budget_s));
    }
  }
  return cmds;
}

void GroupRun::run(const std::vector<size_t>& missing, bool tr, bool tc, std::chrono::milliseconds left) {
  if (missing.empty()) return;
  if (left < std::chrono::seconds(1)) {
    for (size_t i : missing) {
      out[i].error = fmt::format("not generated: the oracle's time limit of {:g} s was used up", time_limit_s);
      out[i].stopped = true;
    }
    return;
  }
  fs::path work = make_temp_dir((root / "tmp-").string());
  std::vector<std::vector<std::string>> cmds = commands(missing, tr, tc);
  const size_t shards = cmds.size();
  std::vector<size_t> shard_of(reqs.size(), 0);
  for (size_t j = 0; j < missing.size(); ++j) {
    const size_t i = missing[j];
    fs::path job = work / keys[i];
    fs::create_directories(job);
    shard_of[i] = j % shards;
    cmds[shard_of[i]].push_back("--job");
    cmds[shard_of[i]].push_back(fmt::format("{}:{}:{}", reqs[i].workload->uuid, reqs[i].seed, job.string()));
  }
  spdlog::info("oracle: generating {} input set(s) for {} on {}{}{}", missing.size(), p.def.name, device,
               tr ? (tc ? ", timing the reference eagerly and under torch.compile" : ", timing the reference") : "",
               shards > 1 ? fmt::format(" ({} processes)", shards) : "");
  // Progress: the oracle writes one JSON line per finished job.
  std::mutex mu;
  size_t done = 0;
  auto progress = [&](std::string_view line) {
    if (line.rfind("{\"uuid\"", 0) != 0) return;
    json j = json::parse(line, nullptr, false);
    if (!j.is_object()) return;
    std::lock_guard lock(mu);
    ++done;
    spdlog::info("oracle: {}/{} {} {} in {:.1f} s", done, missing.size(), j.value("uuid", std::string("?")).substr(0, 8),
                 j.value("ok", false) ? "done" : "failed", j.value("seconds", 0.0));
  };
  std::vector<std::future<RunResult>> runs;
  for (const auto& cmd : cmds)
    runs.push_back(std::async(std::launch::async, [&, cmd] { return run_command(cmd, left, {}, progress); }));
  std::vector<RunResult> results;
  for (auto& f : runs) results.push_back(f.get());
  const std::vector<std::string> stopped = stop_reasons(results, work, done, missing.size());
  for (size_t i : missing) {
    fs::path job = work / keys[i];
    const size_t sh = shard_of[i];
    if (!stopped[sh].empty() && !fs::exists(job / "meta.json") && !fs::exists(job / "error.json")) {
      out[i].error = stopped[sh];
      out[i].stopped = results[sh].timed_out;
      continue;
    }
    if (fs::exists(job / "error.json")) {
      json e = json::parse(read_text(job / "error.json"), nullptr, false);
      out[i].error = e.is_object() ? fmt::format("oracle {} failed: {}", e.value("stage", "?"), e.value("message", "?"))
                                   : "oracle failed";
      continue;
    }
    publish(i, job);
  }
  for (const auto& e : fs::directory_iterator(work)) {
    ::chmod(e.path().c_str(), 0755);
    for (const auto& f : fs::directory_iterator(e.path())) ::chmod(f.path().c_str(), 0644);
  }
  fs::remove_all(work);
}

// An oracle that stops early (time limit, crash) keeps the jobs it finished: each job's meta.json
// (or error.json) is written last and atomically, so a job folder that has one is complete; the
// others get an error naming why their process stopped.
std::vector<std::string> GroupRun::stop_reasons(const std::vector<RunResult>& results, const fs::path& work, size_t done,
                                                size_t missing) const {
  std::vector<std::string> stopped(results.size());
  for (size_t sh = 0; sh < results.size(); ++sh) {
    const RunResult& rr = results[sh];
    if (rr.ok()) continue;
    auto last = output_tail(rr);
    if (rr.exit_code == 2 && !rr.timed_out && rr.signal == 0) {
      fs::remove_all(work);
      user_error("oracle: {}", last);
    }
    std::string why = rr.timed_out ? fmt::format("time limit of {:g} s", time_limit_s)
                      : rr.signal   ? fmt::format("signal {}", rr.signal)
                                    : fmt::format("exit code {}", rr.exit_code);
    stopped[sh] = fmt::format("the oracle stopped before finishing this workload ({}): {}", why, last);
    spdlog::warn("oracle: stopped ({}) after {} of {} workload(s) of {}; the finished ones are kept", why, done, missing,
                 p.def.name);
  }
  return stopped;
}

void GroupRun::publish(size_t i, const fs::path& job) {
  json manifest = {{"key", keys[i]}, {"oracle_version", Oracle::version()}, {"device", device}, {"files", json::object()}};
  for (const char* f : kFiles) {
    if (timings_only && std::string_view(f) != "meta.json") continue;
    if (!fs::exists(job / f)) {
      out[i].error = "the oracle wrote an incomplete entry";
      return;
    }
    manifest["files"][f] = sha256_file(job / f);
  }
  write_atomic(job / "manifest.json", manifest.dump(1));
  make_read_only(job);
  // Publish the entry atomically. Another process may be using an entry under the same key (it
  // holds the same inputs: generation is seeded by the key's parts), so an existing entry is
  // swapped out in one step (RENAME_EXCHANGE), never deleted first; the old one goes with `work`.
  fs::path dst = root / keys[i];
  if (::renameat2(AT_FDCWD, job.c_str(), AT_FDCWD, dst.c_str(), RENAME_NOREPLACE) != 0) {
    if (errno != EEXIST && errno != ENOTEMPTY)
      throw std::runtime_error(fmt::format("cannot move oracle entry into the cache: {}", std::strerror(errno)));
    ::chmod(job.c_str(), 0755);  // the directory entry of `job` changes in the exchange
    if (::renameat2(AT_FDCWD, job.c_str(), AT_FDCWD, dst.c_str(), RENAME_EXCHANGE) != 0)
      throw std::runtime_error(fmt::format("cannot swap oracle entry into the cache: {}", std::strerror(errno)));
    ::chmod(dst.c_str(), 0555);
  }
  out[i].meta = json::parse(read_text(dst / "meta.json"));
  if (!borrowed[i].is_null()) out[i].meta.update(borrowed[i]);
}

}  // namespace

std::vector<OracleEntry> Oracle::ensure(const Problem& p, const std::vector<OracleRequest>& reqs, bool time_reference,
                                        bool time_compile, bool timings_only) {
  const fs::path root = timings_only ? root_.parent_path() / "oracle-timings" : root_;
  fs::create_directories(root);
  std::vector<OracleEntry> out(reqs.size());
  std::vector<size_t> missing;
  std::vector<std::string> keys;
  std::vector<json> borrowed(reqs.size());  // timings from oracle-timings, for the sets that lack them
  size_t n_borrowed = 0;
  for (size_t i = 0; i < reqs.size(); ++i) {
    keys.push_back(key(p, *reqs[i].workload, reqs[i].seed));
    fs::path dir = root / keys.back();
    out[i].dir = dir;
    const bool tr = time_reference && reqs[i].timed, tc = time_compile && reqs[i].timed;
    bool have = fs::exists(dir / "manifest.json");
    if (have) out[i].meta = json::parse(read_text(dir / "meta.json"));
    if (!timings_only && (tr || tc) && !(have && has_timings(out[i].meta, tr, tc))) {
      borrowed[i] = borrowed_timings(keys.back(), tr, tc);
      n_borrowed += !borrowed[i].is_null();
    }
    if (have && !borrowed[i].is_null()) out[i].meta.update(borrowed[i]);
    else if (have && !has_timings(out[i].meta, tr, tc)) have = false;  // redo with timing
    if (!have) missing.push_back(i);
  }
  if (n_borrowed)
    spdlog::info("oracle: the reference timings of {} workload(s) of {} come from earlier measurements on {} "
                 "(the oracle-timings cache); --retime-reference measures them again",
                 n_borrowed, p.def.name, timings_device_);
  if (missing.empty()) return out;
  // One oracle process per group: the sets whose reference is timed, and those that are not; both
  // within one time limit.
  const auto deadline = std::chrono::steady_clock::now() + time_limit();
  auto left = [&] {
    return std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
  };
  std::vector<size_t> timed, untimed;
  for (size_t i : missing) (reqs[i].timed && borrowed[i].is_null() ? timed : untimed).push_back(i);
  const fs::path spec = spec_file(p);
  GroupRun g{p, reqs, keys, borrowed, root, device_, spec, compile_budget_s_, time_limit_s_, timings_only, out};
  g.run(timed, time_reference, time_compile, left());
  g.run(untimed, false, false, left());
  return out;
}

std::vector<json> Oracle::count(const Problem& p, const std::vector<const Workload*>& workloads) {
  fs::path dir = root_.parent_path() / "bounds";
  fs::create_directories(dir);
  std::vector<json> out(workloads.size());
  std::vector<size_t> missing;
  std::vector<fs::path> files;
  for (size_t i = 0; i < workloads.size(); ++i) {
    files.push_back(dir / (count_key(p, *workloads[i]) + ".json"));
    if (fs::exists(files.back())) {
      json j = json::parse(read_text(files.back()), nullptr, false);
      if (j.is_object() && j.value("ok", false)) {
        out[i] = j;
        continue;
      }
    }
    missing.push_back(i);
  }
  if (missing.empty()) return out;
  // The count runs each reference once under PyTorch's dispatch hooks, slow for references that
  // loop in Python (paged attention: seconds to minutes per workload): the workloads are split over
  // up to eight oracle processes (round robin, so large and small workloads mix), run at once; the
  // work is the Python interpreter's, one core per process. KERNELARC_COUNT_PROCS sets the number.
  std::vector<const Workload*> counted;
  for (size_t i : missing) counted.push_back(workloads[i]);
  const size_t shards = process_count(p, counted, 8, "KERNELARC_COUNT_PROCS");
  spdlog::info("oracle: counting the work of {} workload(s) of {} on {} ({} process{})", missing.size(), p.def.name,
               device_, shards, shards == 1 ? "" : "es");
  // Each count is written to the cache as its line arrives, so a process that stops later (time
  // limit, out of memory) loses only the workloads it had not finished.
  std::map<std::string, size_t> index_of;
  for (size_t i : missing) index_of[workloads[i]->uuid] = i;
  std::mutex mu;
  size_t done = 0;
  auto on_line = [&](std::string_view line) {
    if (line.empty() || line.front() != '{') return;
    json j = json::parse(line, nullptr, false);
    if (!j.is_object() || !j.contains("uuid") || !(j.contains("bytes") || j.contains("message"))) return;
    std::lock_guard lock(mu);
    auto it = index_of.find(j.value("uuid", std::string()));
    if (it == index_of.end()) return;
    const bool ok = j.value("ok", false);
    if (ok) write_atomic(files[it->second], j.dump(1));
    out[it->second] = std::move(j);
    ++done;
    spdlog::info("oracle: counted {}/{} {}{}", done, missing.size(), it->first.substr(0, 8), ok ? "" : " (failed)");
  };
  const auto limit = std::min<std::chrono::milliseconds>(time_limit(), std::chrono::minutes(60));
  const fs::path spec = spec_file(p);
  std::vector<std::future<RunResult>> runs;
  for (size_t sh = 0; sh < shards; ++sh) {
    std::vector<std::string> cmd{python(), resource_path("src/oracle/kernelarc_oracle.py").string(), "count",
                                 "--spec", fs::absolute(spec).string(), "--device", device_};
    for (size_t j = sh; j < missing.size(); j += shards) {
      cmd.push_back("--workload");
      cmd.push_back(workloads[missing[j]]->uuid);
    }
    runs.push_back(std::async(std::launch::async, [cmd, limit, &on_line] { return run_command(cmd, limit, {}, on_line); }));
  }
  std::vector<RunResult> results;
  for (auto& f : runs) results.push_back(f.get());
  for (size_t sh = 0; sh < shards; ++sh) {
    const RunResult& rr = results[sh];
    if (rr.ok()) continue;
    if (rr.exit_code == 2 && !rr.timed_out && rr.signal == 0) user_error("oracle: {}", output_tail(rr));
    std::string why = rr.timed_out ? fmt::format("it ran past the time limit of {:g} s", limit.count() / 1000.0)
                      : rr.signal == SIGKILL
                          ? std::string("it was killed (SIGKILL: on Linux usually the out-of-memory killer; "
                                        "KERNELARC_COUNT_PROCS=1 runs one count process at a time)")
                      : rr.signal ? fmt::format("it ended on signal {} ({})", rr.signal, strsignal(rr.signal))
                                  : fmt::format("it exited with code {}", rr.exit_code);
    spdlog::warn("oracle: a count process of {} stopped: {}", p.def.name, why);
    for (size_t j = sh; j < missing.size(); j += shards)
      if (out[missing[j]].is_null())
        out[missing[j]] = {{"uuid", workloads[missing[j]]->uuid},
                           {"ok", false},
                           {"message", fmt::format("not counted: the count process stopped before it ({}): {}", why,
                                                   output_tail(rr))}};
  }
  for (size_t i : missing)
    if (out[i].is_null()) out[i] = {{"uuid", workloads[i]->uuid}, {"ok", false}, {"message", "the oracle printed no count"}};
  return out;
}

namespace {

// The bytes of one file of an entry, after checking them against the entry's manifest.
std::vector<std::byte> checked_bytes(const OracleEntry& e, const std::string& file) {
  json manifest = json::parse(read_text(e.dir / "manifest.json"), nullptr, false);
  if (!manifest.is_object() || !manifest["files"].contains(file))
    user_error("{}: oracle cache entry has no valid manifest; delete the folder to rebuild it", e.dir.string());
  std::string want = manifest["files"][file];
  auto bytes = read_bytes(e.dir / file);  // hash exactly the bytes that are parsed
  std::string got = sha256_hex(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
  if (got != want)
    user_error("{}: cached {} fails its hash check (was {}, now {}); delete the folder to rebuild it",
               e.dir.string(), file, want.substr(0, 12), got.substr(0, 12));
  return bytes;
}

}  // namespace

SafeTensors Oracle::load(const OracleEntry& e, const std::string& file) const {
  return parse_safetensors(checked_bytes(e, file), (e.dir / file).string());
}

SafeTensors Oracle::load_inputs(const Problem& p, const OracleEntry& e) const {
  SafeTensors st = load(e, "inputs.safetensors");
  auto mbytes = checked_bytes(e, "meta.json");  // the recorded hashes are trusted only if meta.json is intact
  json meta = json::parse(std::string_view(reinterpret_cast<const char*>(mbytes.data()), mbytes.size()), nullptr, false);
  if (!meta.is_object() || !meta["inputs"].is_object())
    user_error("{}: oracle entry's meta.json has no inputs; delete the folder to rebuild it", e.dir.string());
  std::vector<std::string> names;
  for (const auto& [name, m] : meta["inputs"].items())
    if (m.is_object() && m.value("regenerate", false)) names.push_back(name);
  if (names.empty()) return st;
  // The oracle draws every input of the job again (no reference run) and writes the named ones into
  // a folder of its own under the cache root, read and deleted here.
  fs::path work = make_temp_dir((root_ / "regen-").string());
  SafeTensors got;
  try {
    const std::string uuid = meta.value("uuid", ""), names_text = fmt::format("{}", fmt::join(names, ", "));
    const uint64_t seed = meta.value("seed", uint64_t{0});
    {  // the server answers one request at a time; reading its output below needs no lock
      std::lock_guard<std::mutex> lock(regen_->mu);
      RegenServer& srv = *regen_;
      const fs::path spec = fs::absolute(spec_file(p));
      if (srv.child.running() && srv.spec != spec) srv.child.kill_and_reap();  // it serves one problem
      if (!srv.child.running()) {
        fs::create_directories(root_.parent_path() / "logs");
        srv.log = root_.parent_path() / "logs" / fmt::format("regen-serve-{}-{}.log", ::getpid(), p.def.name);
        srv.child.start({python(), resource_path("src/oracle/kernelarc_regen_serve.py").string(), "--spec",
                         spec.string(), "--device", device_},
                        srv.log.string());
        srv.spec = spec;
      }
      const std::string req = json{{"uuid", uuid}, {"seed", seed}, {"outdir", work.string()}, {"inputs", names}}.dump() + "\n";
      std::string reply;
      bool timed_out = false, alive = srv.child.write_all(req.data(), req.size());
      const auto deadline = std::chrono::steady_clock::now() + time_limit();
      for (char c = 0; alive && c != '\n';) {
        alive = srv.child.read_exact(&c, 1, deadline, timed_out);
        if (alive && c != '\n') reply += c;
      }
      json r = alive ? json::parse(reply, nullptr, false) : json();
      if (!r.is_object() || !r.value("ok", false)) {
        std::string why = r.is_object()            ? r.value("message", std::string("no message"))
                          : timed_out              ? fmt::format("no answer within {:g} s", time_limit_s_)
                          : alive                  ? fmt::format("unreadable answer '{}'", one_line(reply))
                                                   : "the regeneration process ended";
        if (!r.is_object()) srv.child.kill_and_reap();  // its state is unknown: the next call starts afresh
        user_error("{}: regenerating input(s) {} failed: {} (log: {})", e.dir.string(), names_text, why, srv.log.string());
      }
    }
    got = read_safetensors(work / "inputs.safetensors");
  } catch (...) {
    fs::remove_all(work);
    throw;
  }
  fs::remove_all(work);
  for (const auto& name : names) {
    auto it = got.tensors.find(name);
    if (it == got.tensors.end()) user_error("{}: the oracle's regen did not produce input '{}'", e.dir.string(), name);
    const Tensor& t = it->second;
    const json& m = meta["inputs"][name];
    std::string h = sha256_hex(std::string_view(reinterpret_cast<const char*>(t.data.data()), t.data.size()));
    if (h != m.value("sha256", "") || t.shape != m.value("shape", std::vector<int64_t>{}))
      user_error("{}: regenerated input '{}' does not match the one the reference ran on (SHA-256 {} recorded, {} "
                 "now): input generation is not deterministic on this machine (torch version or device changed "
                 "since the entry was written?); delete the folder to rebuild it",
                 e.dir.string(), name, m.value("sha256", "?").substr(0, 12), h.substr(0, 12));
    st.tensors[name] = std::move(it->second);
  }
  return st;
}

}  // namespace ka
