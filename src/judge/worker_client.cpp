// judge/worker_client.cpp — spawning workers (`kernelarc worker --target T`) and talking to them.
#include "judge/worker_client.h"

#include <elf.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <sstream>

#include "judge/protocol.h"
#include "judge/sandbox.h"
#include "util/error.h"
#include "util/files.h"
#include "util/resources.h"

namespace ka {
namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

Verdict verdict_from(const std::string& s) {
  for (Verdict v : {Verdict::compile_error, Verdict::crash, Verdict::illegal_memory_access, Verdict::runtime_error,
                    Verdict::timeout, Verdict::wrong_answer, Verdict::reward_hack, Verdict::out_of_bounds_write,
                    Verdict::timing_mismatch, Verdict::unavailable})
    if (verdict_name(v) == s) return v;
  return Verdict::runtime_error;
}

// The absolute DT_RUNPATH / DT_RPATH folders of a 64-bit ELF shared library (e.g. PyTorch's lib
// folder for a torch-binding candidate); empty for anything else.
std::vector<std::string> elf_run_paths(const std::vector<std::byte>& b) {
  std::vector<std::string> out;
  auto at = [&](uint64_t off, size_t n) { return off <= b.size() && n <= b.size() - off; };
  Elf64_Ehdr eh;
  if (!at(0, sizeof eh)) return out;
  std::memcpy(&eh, b.data(), sizeof eh);
  if (std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64) return out;
  std::vector<Elf64_Phdr> ph(eh.e_phnum);
  for (size_t i = 0; i < ph.size(); ++i) {
    if (!at(eh.e_phoff + i * sizeof(Elf64_Phdr), sizeof(Elf64_Phdr))) return out;
    std::memcpy(&ph[i], b.data() + eh.e_phoff + i * sizeof(Elf64_Phdr), sizeof(Elf64_Phdr));
  }
  auto file_offset = [&](uint64_t vaddr) -> uint64_t {  // of a virtual address, through PT_LOAD
    for (const auto& p : ph)
      if (p.p_type == PT_LOAD && vaddr >= p.p_vaddr && vaddr < p.p_vaddr + p.p_filesz) return vaddr - p.p_vaddr + p.p_offset;
    return UINT64_MAX;
  };
  for (const auto& p : ph) {
    if (p.p_type != PT_DYNAMIC) continue;
    uint64_t strtab = UINT64_MAX;
    std::vector<uint64_t> names;
    for (uint64_t off = p.p_offset; at(off, sizeof(Elf64_Dyn)) && off < p.p_offset + p.p_filesz; off += sizeof(Elf64_Dyn)) {
      Elf64_Dyn d;
      std::memcpy(&d, b.data() + off, sizeof d);
      if (d.d_tag == DT_NULL) break;
      if (d.d_tag == DT_STRTAB) strtab = file_offset(d.d_un.d_ptr);
      if (d.d_tag == DT_RUNPATH || d.d_tag == DT_RPATH) names.push_back(d.d_un.d_val);
    }
    for (uint64_t n : names) {
      if (strtab == UINT64_MAX || !at(strtab + n, 1)) continue;
      const char* s = reinterpret_cast<const char*>(b.data() + strtab + n);
      std::string list(s, strnlen(s, b.size() - strtab - n));
      for (size_t pos = 0; pos <= list.size();) {
        size_t e = std::min(list.find(':', pos), list.size());
        if (e > pos && list[pos] == '/') out.push_back(list.substr(pos, e - pos));
        pos = e + 1;
      }
    }
  }
  return out;
}

}  // namespace

WorkerClient::WorkerClient(std::string target, std::filesystem::path log_path)
    : target_(std::move(target)), log_(std::move(log_path)) {}

WorkerClient::~WorkerClient() { stop(); }

// KERNELARC_SANDBOX as worker arguments: unset or "on" (every defence), "off" (none), or
// "without:NAME,..." (all but those; for a machine where one of them stops the device).
std::vector<std::string> sandbox_mode_args() {
  const char* env = std::getenv("KERNELARC_SANDBOX");
  const std::string mode = env ? env : "";
  if (mode.empty() || mode == "on") return {};
  if (mode == "off") return {"--no-sandbox"};
  const std::string prefix = "without:";
  std::vector<std::string> args;
  bool known = mode.rfind(prefix, 0) == 0 && mode.size() > prefix.size() && mode.back() != ',';
  std::stringstream ss(known ? mode.substr(prefix.size()) : "");
  for (std::string name; known && std::getline(ss, name, ',');) {
    known = std::find(sandbox_defences().begin(), sandbox_defences().end(), name) != sandbox_defences().end();
    args.insert(args.end(), {"--without", name});
  }
  if (known) return args;
  std::string names;
  for (const auto& n : sandbox_defences()) names += (names.empty() ? "" : ",") + n;
  user_error("KERNELARC_SANDBOX='{}': expected on, off or without:NAME,... with names from {}", mode, names);
}

// KERNELARC_KEPT_SETS_BYTES as worker arguments: the most bytes of input sets the worker keeps on
// the device (unset: half the device's memory), e.g. for a GPU shared with other work.
std::vector<std::string> kept_bytes_args() {
  const char* env = std::getenv("KERNELARC_KEPT_SETS_BYTES");
  if (!env || !*env) return {};
  const std::string v = env;
  if (v.find_first_not_of("0123456789") != std::string::npos || v.size() > 18 || std::stoll(v) <= 0)
    user_error("KERNELARC_KEPT_SETS_BYTES='{}': expected a positive number of bytes", v);
  return {"--kept-bytes", v};
}

// The worker: `kernelarc worker --target T [--read FOLDER]... [--no-sandbox]`, with the scrubbed
// environment only and none of this process's open files. This process is made non-dumpable first.
void WorkerClient::start_worker() {
  harden_judge_process();
  std::vector<std::string> argv{self_executable().string(), "worker", "--target", target_};
  for (const auto& t : read_trees_) {
    argv.emplace_back("--read");
    argv.push_back(t.string());
  }
  for (const std::string& a : sandbox_mode_args()) argv.push_back(a);
  for (const std::string& a : kept_bytes_args()) argv.push_back(a);
  child_.start(argv, log_.string(), worker_environment(), true);
}

// Says once per judge process which defences the worker runs without, and whether the cache lies
// under a folder the worker may read.
static void warn_about_sandbox(const json& hello) {
  static bool said = false;
  if (said) return;
  said = true;
  std::vector<std::string> off = hello.value("sandbox", json::object()).value("off", std::vector<std::string>{});
  if (!off.empty()) {
    std::string list;
    for (const auto& o : off) list += (list.empty() ? "" : "; ") + o;
    spdlog::warn("the worker's sandbox runs without: {} (docs/judge.md, Sandbox)", list);
  }
  const fs::path cache = fs::weakly_canonical(cache_root());
  for (const auto& t : sandbox_read_trees({})) {
    auto rel = cache.lexically_relative(t);
    if (!rel.empty() && *rel.begin() != "..")
      spdlog::warn("the cache {} lies under {}, which the sandboxed worker may read: move it (KERNELARC_CACHE)",
                   cache.string(), t.string());
  }
}

const json& WorkerClient::hello() {
  if (child_.running()) return hello_;
  ++restarts_;
  start_worker();
  unsigned char len[8];
  bool timed_out = false;
  auto deadline = Clock::now() + std::chrono::seconds(120);
  json h;
  bool got = child_.read_exact(len, 8, deadline, timed_out);
  if (got) {
    uint64_t n = 0;
    for (int i = 7; i >= 0; --i) n = (n << 8) | len[i];
    std::string s(n, '\0');
    got = n < (1u << 20) && child_.read_exact(s.data(), n, deadline, timed_out);
    if (got) h = json::parse(s, nullptr, false);
  }
  if (!got || !h.is_object()) {
    child_.kill_and_reap();
    throw std::runtime_error(fmt::format("the {} worker did not start ({}); see {}", target_,
                                         timed_out ? "no hello within 120 s" : "it died", log_.string()));
  }
  if (!h.value("ok", false)) {
    child_.reap(std::chrono::seconds(5));
    user_error("{}", h.value("message", "the worker cannot run this target"));
  }
  hello_ = h;
  warn_about_sandbox(hello_);
  return hello_;
}

void WorkerClient::stop() {
  if (!child_.running()) return;
  std::string h = wire::encode_header({{"op", "exit"}});
  child_.write_all(h.data(), h.size());
  child_.reap(std::chrono::seconds(5));
}

WorkerReply WorkerClient::died(bool timed_out, std::chrono::milliseconds timeout) {
  RunResult rr = timed_out ? child_.kill_and_reap() : child_.reap(std::chrono::seconds(5));
  WorkerReply r;
  if (timed_out) {
    r.verdict = Verdict::timeout;
    r.message = fmt::format("no answer within {:.0f} s: the candidate hangs or is far too slow (worker killed)",
                            timeout.count() / 1000.0);
  } else if (rr.signal) {
    r.verdict = Verdict::crash;
    r.message = fmt::format("the worker died with {}", signal_name(rr.signal));
  } else {
    r.verdict = Verdict::crash;
    r.message = fmt::format("the worker exited with code {} during the call", rr.exit_code);
  }
  return r;
}

WorkerReply WorkerClient::request(const json& header, const std::vector<std::pair<const void*, size_t>>& payload,
                                  std::chrono::milliseconds timeout) {
  bool fresh = !child_.running();
  hello();
  if (fresh && !library_.empty() && header.value("op", "") != "load") {
    WorkerReply lr = send_library(timeout);
    if (!lr.ok) return lr;
  }
  return raw_request(header, payload, timeout);
}

WorkerReply WorkerClient::raw_request(const json& header, const std::vector<std::pair<const void*, size_t>>& payload,
                                      std::chrono::milliseconds timeout) {
  auto deadline = Clock::now() + timeout;
  bool sent = true;
  if (!header.is_null()) {  // null: only read the next reply
    std::string h = wire::encode_header(header);
    sent = child_.write_all(h.data(), h.size());
    for (const auto& [p, n] : payload) sent = sent && child_.write_all(p, n);
  }
  if (!sent) return died(false, timeout);
  unsigned char len[8];
  bool timed_out = false;
  if (!child_.read_exact(len, 8, deadline, timed_out)) return died(timed_out, timeout);
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | len[i];
  std::string s(n, '\0');
  if (n > (64u << 20) || !child_.read_exact(s.data(), n, deadline, timed_out)) return died(timed_out, timeout);
  WorkerReply r;
  r.header = json::parse(s, nullptr, false);
  if (!r.header.is_object()) {
    child_.kill_and_reap();
    r.verdict = Verdict::crash;
    r.message = "the worker sent a corrupt reply";
    return r;
  }
  size_t pn = r.header.value("payload", size_t{0});
  r.payload.resize(pn);
  if (pn && !child_.read_exact(r.payload.data(), pn, deadline, timed_out)) return died(timed_out, timeout);
  r.ok = r.header.value("ok", false);
  if (!r.ok) {
    r.verdict = verdict_from(r.header.value("verdict", "runtime_error"));
    r.message = r.header.value("message", "");
    if (r.header.value("fatal", false)) child_.reap(std::chrono::seconds(10));
  }
  return r;
}

WorkerReply WorkerClient::send_library(std::chrono::milliseconds timeout) {
  std::vector<std::byte> bytes = read_bytes(library_);
  return raw_request({{"op", "load"}, {"library", library_.filename().string()}, {"library_bytes", bytes.size()}},
                     {{bytes.data(), bytes.size()}}, timeout);
}

// A library whose run paths lie outside the folders the running worker may read (a torch-binding
// candidate: PyTorch's libraries, and the site-packages folder whose CUDA libraries they load)
// needs a worker started with them.
void WorkerClient::allow_library_folders(const std::vector<std::byte>& library) {
  bool added = false;
  for (const std::string& dir : elf_run_paths(library)) {
    fs::path tree = dir;
    std::string s = tree.lexically_normal().string();
    if (size_t sp = s.find("/site-packages/"); sp != std::string::npos) tree = s.substr(0, sp + 14);
    if (std::find(read_trees_.begin(), read_trees_.end(), tree) != read_trees_.end()) continue;
    read_trees_.push_back(tree);
    added = true;
  }
  if (added && child_.running()) stop();
}

WorkerReply WorkerClient::load(const std::filesystem::path& library, std::chrono::milliseconds timeout) {
  library_ = library;
  allow_library_folders(read_bytes(library));
  hello();
  return send_library(timeout);
}

WorkerReply WorkerClient::calibrate(const json& request, std::chrono::milliseconds timeout) {
  hello();
  return raw_request({{"op", "calibrate"}, {"request", request}}, {}, timeout);
}

WorkerReply WorkerClient::put(int64_t set, const std::vector<CallArg>& args, std::chrono::milliseconds timeout,
                              bool budgeted) {
  json h = {{"op", "put"}, {"set", set}, {"args", json::array()}, {"budget", budgeted}};
  std::vector<std::pair<const void*, size_t>> payload;
  for (const auto& a : args) {
    const Tensor& t = *a.tensor;
    h["args"].push_back({{"dtype", static_cast<int>(t.dtype)}, {"shape", t.shape}, {"scalar", t.scalar},
                         {"output", a.output}, {"nbytes", a.output ? t.nbytes() : t.data.size()}});
    if (!a.output) payload.emplace_back(t.data.data(), t.data.size());
  }
  return request(h, payload, timeout);
}

WorkerReply WorkerClient::drop(const std::vector<int64_t>& sets, std::chrono::milliseconds timeout) {
  json h = {{"op", "drop"}};
  if (!sets.empty()) h["sets"] = sets;
  return request(h, {}, timeout);
}

WorkerReply WorkerClient::start_run(json header, std::chrono::milliseconds timeout) {
  header["op"] = "run";
  return request(header, {}, timeout);
}

WorkerReply WorkerClient::in_run(const json& header, std::chrono::milliseconds timeout) {
  if (!child_.running()) {
    WorkerReply r;
    r.verdict = Verdict::crash;
    r.message = "the worker is gone";
    return r;
  }
  return raw_request(header, {}, timeout);
}

}  // namespace ka
