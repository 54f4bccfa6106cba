// judge/worker_client.cpp — spawning workers (`kernelarc worker --target T`) and talking to them.
#include "judge/worker_client.h"

#include <fmt/format.h>

#include "judge/protocol.h"
#include "util/error.h"
#include "util/resources.h"

namespace ka {
namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

Verdict verdict_from(const std::string& s) {
  for (Verdict v : {Verdict::compile_error, Verdict::crash, Verdict::illegal_memory_access, Verdict::runtime_error,
                    Verdict::timeout, Verdict::wrong_answer, Verdict::reward_hack, Verdict::out_of_bounds_write, Verdict::unavailable})
    if (verdict_name(v) == s) return v;
  return Verdict::runtime_error;
}

}  // namespace

WorkerClient::WorkerClient(std::string target, std::filesystem::path log_path)
    : target_(std::move(target)), log_(std::move(log_path)) {}

WorkerClient::~WorkerClient() { stop(); }

const json& WorkerClient::hello() {
  if (child_.running()) return hello_;
  ++restarts_;
  child_.start({self_executable().string(), "worker", "--target", target_}, log_.string());
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
    WorkerReply lr = raw_request({{"op", "load"}, {"library", library_.string()}}, {}, timeout);
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

WorkerReply WorkerClient::load(const std::filesystem::path& library, std::chrono::milliseconds timeout) {
  library_ = library;
  return request({{"op", "load"}, {"library", library.string()}}, {}, timeout);
}

WorkerReply WorkerClient::calibrate(const json& request, std::chrono::milliseconds timeout) {
  hello();
  return raw_request({{"op", "calibrate"}, {"request", request}}, {}, timeout);
}

WorkerReply WorkerClient::put(int64_t set, const std::vector<CallArg>& args, std::chrono::milliseconds timeout) {
  json h = {{"op", "put"}, {"set", set}, {"args", json::array()}};
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
