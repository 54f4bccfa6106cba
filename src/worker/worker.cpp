// worker/worker.cpp — the worker loop: the process the candidate runs in. The protocol streams
// move off fds 0/1 at start so that a candidate's prints go to the log (stderr) and cannot corrupt
// replies. The worker keeps input sets ("put": inputs only, on the device; scalars on the host) and
// runs calls on them; it never receives a reference output, nor anything derived from one: every
// comparison happens in the judge (judge/evaluator.cpp), which asks for a call's output bytes only
// after the call has finished.
//
// Every call looks the same to the candidate, whether the judge uses it to check, to warm up or to
// time: a run allocates one pool per argument and call i takes its buffers at byte offset 256·i
// (fresh pointers), inputs copied from the set's pristine device copy, outputs filled with the
// poison 0xFF (NaN in every float format that has one), and a guard zone of kGuard canary bytes on
// both sides of every buffer, checked after every call. Which set a call uses arrives only just
// before that call (the judge's "call" message); whether its outputs go back arrives only after it
// (the "after" message), so nothing in this process tells the candidate which calls are checked.
// The sets live as long as this process (a fresh worker answers "missing_set"); holding their
// inputs' host bytes too would put every kept set in host memory twice (018's 94 sets of 1.1 GB).
#include "worker/worker.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <kernelarc/abi.h>
#include <map>

#include "judge/protocol.h"
#include "judge/sandbox.h"
#include "problem/dtype.h"
#include "target/backend.h"
#include "util/error.h"

namespace ka {
namespace {

using json = nlohmann::json;
using EntryFn = int (*)(const TensorArg*, int);

constexpr size_t kGuard = wire::kGuardBytes;
constexpr unsigned char kCanary = wire::kCanaryByte;
constexpr int kPoison = 0xff;
constexpr size_t kShift = 256;  // bytes between call i's buffers and call i + 1's

struct Arg {
  int32_t dtype = 0;
  std::vector<int64_t> shape;
  bool scalar = false, output = false;
  size_t nbytes = 0;
  std::vector<std::byte> host;  // scalars' bytes (inputs not yet on the device while a put runs)
};

TensorArg make_arg(const Arg& a, void* data) {
  TensorArg t{};
  t.data = data;
  t.dtype = a.dtype;
  t.ndim = a.scalar ? -1 : static_cast<int32_t>(a.shape.size());
  int64_t stride = 1;
  for (int i = static_cast<int>(a.shape.size()) - 1; i >= 0; --i) {
    t.shape[i] = a.shape[static_cast<size_t>(i)];
    t.strides[i] = stride;
    stride *= a.shape[static_cast<size_t>(i)];
  }
  return t;
}

// Thrown out of a run when the judge ends it early ({"op":"abort"} instead of the next "call").
struct RunAborted {};

// Device buffers released when the scope ends.
struct Buffers {
  Backend& be;
  std::vector<void*> v;
  ~Buffers() {
    for (void* p : v)
      if (p) be.release(p);
  }
};

class Worker {
 public:
  Worker(int in, int out, std::unique_ptr<Backend> b, json sandbox, size_t kept_bytes)
      : in_(in), out_(out), be_(std::move(b)), sandbox_(std::move(sandbox)), kept_override_(kept_bytes) {}
  ~Worker() {
    for (auto& [id, s] : sets_) release(s);
  }

  int loop() {
    const json device = be_->device_info();
    kept_budget_ = kept_override_ ? kept_override_ : kept_set_budget(device.value("memory_bytes", uint64_t{0}));
    if (!wire::write_message(out_, {{"ok", true}, {"target", be_->name()}, {"device", device}, {"sandbox", sandbox_}}))
      return 1;
    for (;;) {
      json h;
      if (!wire::read_header(in_, h)) return 0;  // judge went away
      std::string op = h.value("op", "");
      try {
        if (op == "exit") {
          wire::write_message(out_, {{"ok", true}});
          return 0;
        } else if (op == "load") {
          load(h);
        } else if (op == "run") {
          run(h);
        } else if (op == "put") {
          put(h);
        } else if (op == "drop") {
          drop(h);
        } else if (op == "call" || op == "after" || op == "abort") {
          // Left over from a run that failed before reading it: the judge expects no reply.
        } else if (op == "calibrate") {
          json r = be_->calibrate(h.value("request", json::object()));
          be_->sync();
          wire::write_message(out_, {{"ok", true}, {"calibration", r}});
        } else {
          reply_fail("runtime_error", "unknown op " + op, false);
        }
      } catch (const BackendFault& f) {
        reply_fail(f.verdict, f.message, f.fatal);
        if (f.fatal) return 3;
      } catch (const std::exception& e) {
        reply_fail("runtime_error", std::string("the candidate threw: ") + e.what(), false);
      }
    }
  }

 private:
  int in_, out_;
  std::unique_ptr<Backend> be_;
  json sandbox_;  // what the worker's sandbox holds (judge/sandbox.h), for the hello
  std::vector<void*> libs_;
  EntryFn entry_ = nullptr;

  struct KeptSet {
    std::vector<Arg> args;        // inputs (host bytes of scalars only), then outputs (dtype/shape)
    std::vector<void*> pristine;  // device copy of each non-scalar input, parallel to args
    size_t kept_bytes = 0;        // what it counts against the budget once kept
  };
  std::map<int64_t, KeptSet> sets_;
  std::vector<std::byte> stage_a_, stage_b_;
  // Kept sets may fill half the device's memory at most: the rest is the candidate's, and the
  // oracle's, which draws the next sets on the same device while this worker holds these.
  size_t kept_override_ = 0;                  // --kept-bytes (KERNELARC_KEPT_SETS_BYTES in the judge)
  size_t kept_budget_ = 0, kept_bytes_ = 0;  // budget 0: no device size known, no limit

  static size_t kept_set_budget(uint64_t device_bytes) { return static_cast<size_t>(device_bytes / 2); }

  static size_t set_bytes(const KeptSet& s) {
    size_t n = 0;
    for (const Arg& a : s.args)
      if (!a.output && !a.scalar) n += a.nbytes;
    return n;
  }

  void release(KeptSet& s) {
    for (void*& p : s.pristine)
      if (p) be_->release(std::exchange(p, nullptr));
    kept_bytes_ -= std::exchange(s.kept_bytes, 0);
  }

  void reply_fail(const std::string& verdict, const std::string& msg, bool fatal) {
    wire::write_message(out_, {{"ok", false}, {"verdict", verdict}, {"message", one_line(msg)}, {"fatal", fatal}});
  }

  void load(const json& h) {
    // A worker judges one candidate after another; earlier libraries stay loaded (unloading
    // device code mid-process is not worth the risk) and the newest one is the active entry.
    entry_ = nullptr;
    std::string path = library_from_payload(h);
    void* lib = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!lib) throw BackendFault{"compile_error", std::string("cannot load the candidate: ") + ::dlerror(), false};
    libs_.push_back(lib);
    entry_ = reinterpret_cast<EntryFn>(::dlsym(lib, "kernelarc_entry"));
    if (!entry_) throw BackendFault{"compile_error", "the candidate library exports no kernelarc_entry", false};
    wire::write_message(out_, {{"ok", true}});
  }

  // The candidate library comes as the load's payload (the sandbox lets the worker read no
  // KernelArc folder): it is written to an anonymous memory file, loaded through /proc/self/fd.
  // The file stays open: a closed one's number, reused, would name an already loaded library.
  std::string library_from_payload(const json& h) {
    const size_t n = h.at("library_bytes");
    std::vector<char> bytes(n);
    if (!wire::read_full(in_, bytes.data(), n)) throw BackendFault{"runtime_error", "short payload", true};
    int fd = ::memfd_create("candidate.so", MFD_CLOEXEC);
    if (fd < 0) throw BackendFault{"runtime_error", std::string("memfd_create: ") + std::strerror(errno), false};
    for (size_t off = 0; off < n;) {
      ssize_t w = ::write(fd, bytes.data() + off, n - off);
      if (w <= 0) throw BackendFault{"runtime_error", std::string("writing the candidate: ") + std::strerror(errno), false};
      off += static_cast<size_t>(w);
    }
    return fmt::format("/proc/self/fd/{}", fd);
  }

  std::vector<Arg> read_args(const json& h) {
    std::vector<Arg> args;
    for (const auto& j : h.at("args")) {
      Arg a;
      a.dtype = j.at("dtype");
      a.shape = j.at("shape").get<std::vector<int64_t>>();
      a.scalar = j.value("scalar", false);
      a.output = j.value("output", false);
      a.nbytes = j.at("nbytes");
      if (!a.output) {
        a.host.resize(a.nbytes);
        if (!wire::read_full(in_, a.host.data(), a.nbytes)) throw BackendFault{"runtime_error", "short payload", true};
      }
      args.push_back(std::move(a));
    }
    return args;
  }

  void call(const std::vector<TensorArg>& t) {
    if (!entry_) throw BackendFault{"runtime_error", "no candidate loaded", false};
    int rc = entry_(t.data(), static_cast<int>(t.size()));
    if (rc == -2)
      throw BackendFault{"runtime_error", "the solution registered no function under its entry point's name", false};
    if (rc != 0)
      throw BackendFault{"runtime_error",
                         fmt::format("the entry function does not take {} arguments (inputs then outputs)", t.size()),
                         false};
  }

  // "put": {"set": ID, "args": [...]} with the inputs' bytes as payload (outputs: dtype and shape
  // only). A set that does not fit on the device, or would take the kept sets past their budget
  // (half the device's memory; not checked with "budget": false), is refused with "no_room".
  void put(const json& h) {
    const int64_t id = h.at("set");
    KeptSet s;
    s.args = read_args(h);
    s.pristine.assign(s.args.size(), nullptr);
    if (h.value("budget", true) && kept_budget_ && kept_bytes_ + set_bytes(s) > kept_budget_) {
      wire::write_message(out_, {{"ok", false}, {"verdict", "unavailable"}, {"no_room", true}, {"fatal", false},
                                 {"message", "the kept input sets would hold more than half the device's memory"}});
      return;
    }
    try {
      for (size_t i = 0; i < s.args.size(); ++i) {
        if (s.args[i].output || s.args[i].scalar) continue;
        s.pristine[i] = be_->alloc(s.args[i].nbytes);
        be_->to_device(s.pristine[i], s.args[i].host.data(), s.args[i].nbytes);
      }
      be_->sync();
    } catch (const BackendFault& f) {
      release(s);
      if (f.fatal) throw;
      wire::write_message(out_, {{"ok", false}, {"verdict", "unavailable"}, {"no_room", true}, {"fatal", false},
                                 {"message", one_line(f.message)}});
      return;
    }
    for (size_t i = 0; i < s.args.size(); ++i)
      if (s.pristine[i]) std::vector<std::byte>().swap(s.args[i].host);  // the device copy is the one kept
    if (auto old = sets_.find(id); old != sets_.end()) release(old->second);
    s.kept_bytes = set_bytes(s);
    kept_bytes_ += s.kept_bytes;
    sets_[id] = std::move(s);
    wire::write_message(out_, {{"ok", true}});
  }

  // "drop": {"sets": [ID, ...]} frees those sets; without "sets", every set.
  void drop(const json& h) {
    if (!h.contains("sets")) {
      for (auto& [id, s] : sets_) release(s);
      sets_.clear();
    } else {
      for (int64_t id : h["sets"].get<std::vector<int64_t>>())
        if (auto it = sets_.find(id); it != sets_.end()) {
          release(it->second);
          sets_.erase(it);
        }
    }
    wire::write_message(out_, {{"ok", true}});
  }

  // Byte equality of two device buffers, compared on the host a chunk at a time (staging buffers
  // reused across calls: a 1 GB input costs two 1 GB copies back, not a 1 GB host allocation).
  bool same_on_device(const void* a, const void* b, size_t n) {
    constexpr size_t kChunk = size_t{64} << 20;
    const size_t c = std::min(n, kChunk);
    if (stage_a_.size() < c) {
      stage_a_.resize(c);
      stage_b_.resize(c);
    }
    for (size_t off = 0; off < n; off += kChunk) {
      const size_t m = std::min(kChunk, n - off);
      be_->to_host(stage_a_.data(), static_cast<const char*>(a) + off, m);
      be_->to_host(stage_b_.data(), static_cast<const char*>(b) + off, m);
      if (std::memcmp(stage_a_.data(), stage_b_.data(), m) != 0) return false;
    }
    return true;
  }

  // True when the kGuard bytes at p all still hold the canary.
  bool guard_intact(const void* p) {
    unsigned char g[kGuard];
    be_->to_host(g, p, kGuard);
    return std::all_of(g, g + kGuard, [](unsigned char c) { return c == kCanary; });
  }

  void run(const json& h);
  void after_call(const std::vector<KeptSet*>& sets, size_t cur, const std::vector<char*>& region);
};

// "run": {"sets": [ID, ...], "calls": N, "warmup": W} → {"ok":true,"ready":true}; then per call
// the exchange described in judge/protocol.h; finally {"ok":true,"samples_us":[N − W values],
// "activity":[...]}.
void Worker::run(const json& h) {
  std::vector<KeptSet*> sets;
  for (int64_t id : h.at("sets").get<std::vector<int64_t>>()) {
    auto it = sets_.find(id);
    if (it == sets_.end()) {
      wire::write_message(out_, {{"ok", false}, {"verdict", "runtime_error"}, {"missing_set", true}, {"fatal", false},
                                 {"message", "this worker does not hold that input set"}});
      return;
    }
    sets.push_back(&it->second);
  }
  const std::vector<int64_t> ids = h.at("sets").get<std::vector<int64_t>>();
  const int calls = h.at("calls"), warmup = h.value("warmup", 0);
  if (sets.empty() || calls < 1 || warmup < 0 || warmup >= calls)
    throw BackendFault{"runtime_error", "malformed run request", false};
  const std::vector<Arg>& shape = sets[0]->args;
  for (const KeptSet* s : sets) {
    bool same = s->args.size() == shape.size();
    for (size_t i = 0; same && i < shape.size(); ++i) same = s->args[i].nbytes == shape[i].nbytes;
    if (!same) throw BackendFault{"runtime_error", "the sets of one run differ in their arguments", false};
  }
  Buffers pool{*be_, std::vector<void*>(shape.size(), nullptr)};
  for (size_t i = 0; i < shape.size(); ++i)
    if (!shape[i].scalar) pool.v[i] = be_->alloc(2 * kGuard + shape[i].nbytes + kShift * static_cast<size_t>(calls - 1));
  be_->sync();
  wire::write_message(out_, {{"ok", true}, {"ready", true}});

  size_t cur = 0;                                  // index into sets of the current call's set
  std::vector<char*> region(shape.size(), nullptr);  // the current call's buffers
  std::vector<TensorArg> t(shape.size());
  auto setup = [&](int call_index) {
    json c;
    if (!wire::read_header(in_, c)) throw BackendFault{"runtime_error", "the judge went away mid-run", true};
    if (c.value("op", "") == "abort") throw RunAborted{};  // the judge has its verdict
    if (c.value("op", "") != "call") throw BackendFault{"runtime_error", "the judge broke off the run", true};
    auto at = std::find(ids.begin(), ids.end(), c.at("set").get<int64_t>());
    if (at == ids.end()) throw BackendFault{"runtime_error", "a call named a set outside its run", false};
    cur = static_cast<size_t>(at - ids.begin());
    const KeptSet& s = *sets[cur];
    for (size_t i = 0; i < shape.size(); ++i) {
      const Arg& a = s.args[i];
      if (a.scalar) {
        t[i] = make_arg(a, const_cast<std::byte*>(a.host.data()));
        continue;
      }
      char* p = static_cast<char*>(pool.v[i]) + kShift * static_cast<size_t>(call_index) + kGuard;
      region[i] = p;
      be_->fill(p - kGuard, kCanary, kGuard);
      be_->fill(p + a.nbytes, kCanary, kGuard);
      if (a.output) be_->fill(p, kPoison, a.nbytes);
      else be_->copy(p, s.pristine[i], a.nbytes);
      t[i] = make_arg(a, p);
    }
  };
  auto after = [&](int) { after_call(sets, cur, region); };
  TimingResult r;
  try {
    r = be_->time_calls(warmup, calls - warmup, setup, [&] { call(t); }, after);
  } catch (const RunAborted&) {
    be_->sync();
    wire::write_message(out_, {{"ok", true}, {"aborted", true}});
    return;
  }
  be_->sync();
  wire::write_message(out_, {{"ok", true}, {"samples_us", r.samples_us}, {"activity", r.activity}});
}

// After every call (synchronised): the guard zones, then the reply to "call"; then the judge's
// "after" says whether the outputs go back and whether the inputs are checked against their
// pristine copies ({"ok":true,"payload":BYTES} or with "input_written": INDEX).
void Worker::after_call(const std::vector<KeptSet*>& sets, size_t cur, const std::vector<char*>& region) {
  const KeptSet& s = *sets[cur];
  for (size_t i = 0; i < s.args.size(); ++i) {
    if (s.args[i].scalar) continue;
    const char* side = !guard_intact(region[i] - kGuard) ? "before the start"
                       : !guard_intact(region[i] + s.args[i].nbytes) ? "past the end" : nullptr;
    if (side)
      throw BackendFault{"out_of_bounds_write",
                         fmt::format("the candidate wrote {} of argument {} ({})", side, i,
                                     s.args[i].output ? "an output" : "an input"), false};
  }
  wire::write_message(out_, {{"ok", true}});
  json a;
  if (!wire::read_header(in_, a) || a.value("op", "") != "after")
    throw BackendFault{"runtime_error", "the judge broke off the run", true};
  json reply = {{"ok", true}, {"payload", 0}};
  if (a.value("inputs", false))
    for (size_t i = 0; i < s.args.size(); ++i)
      if (!s.args[i].output && !s.args[i].scalar && !same_on_device(region[i], s.pristine[i], s.args[i].nbytes)) {
        reply["input_written"] = i;
        break;
      }
  std::vector<std::vector<std::byte>> back;
  std::vector<std::pair<const void*, size_t>> payload;
  if (a.value("fetch", false) && !reply.contains("input_written")) {
    size_t total = 0;
    for (size_t i = 0; i < s.args.size(); ++i) {
      if (!s.args[i].output) continue;
      back.emplace_back(s.args[i].nbytes);
      be_->to_host(back.back().data(), region[i], s.args[i].nbytes);
      total += s.args[i].nbytes;
    }
    for (const auto& b : back) payload.emplace_back(b.data(), b.size());
    reply["payload"] = total;
  }
  wire::write_message(out_, reply, payload);
}

}  // namespace

int worker_main(const std::string& target, const SandboxPolicy& sandbox, size_t kept_bytes) {
  // First, single-threaded, before the backend opens the device: the sandbox (judge/sandbox.h).
  SandboxReport jail = enter_sandbox(sandbox);
  std::fprintf(stderr, "%s\n", jail.summary().c_str());
  int in = ::dup(0), out = ::dup(1);
  ::fcntl(in, F_SETFD, FD_CLOEXEC);
  ::fcntl(out, F_SETFD, FD_CLOEXEC);
  int devnull = ::open("/dev/null", O_RDONLY);
  ::dup2(devnull, 0);
  ::dup2(2, 1);  // the candidate's stdout goes to the worker log
  std::unique_ptr<Backend> be;
  try {
    be = target == "cuda" ? make_cuda_backend() : make_host_backend();
  } catch (const UserError& e) {
    wire::write_message(out, {{"ok", false}, {"verdict", "unavailable"}, {"message", one_line(e.what())}, {"fatal", true}});
    return 2;
  } catch (const BackendFault& f) {
    wire::write_message(out, {{"ok", false}, {"verdict", f.verdict}, {"message", f.message}, {"fatal", true}});
    return 2;
  }
  return Worker(in, out, std::move(be), json{{"on", jail.on}, {"off", jail.off}}, kept_bytes).loop();
}

}  // namespace ka
