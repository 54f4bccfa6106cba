// worker/worker.cpp — the worker loop. The protocol streams move off fds 0/1 at start so that a
// candidate's prints go to the log (stderr) and cannot corrupt replies. Each "run" poisons the
// outputs (0xFF bytes: NaN in every float format that has one) before the call in check mode, and
// in time mode gives every call fresh argument buffers shifted by 256 bytes, as SOL-ExecBench does.
// Input sets can be kept here ("put": inputs on the device only, scalars and reference outputs on
// the host), so that a session judging many candidates sends each set once: a "run" naming a set
// copies its pristine device inputs into fresh buffers, and in check mode compares the outputs
// with the reference and the inputs with their pristine copies here (chunk by chunk through the
// host, so no input is held twice), replying with the comparison only. The sets live as long as
// this process; a fresh worker answers "missing_set". (Holding the inputs' host bytes as well
// would put every kept set in host memory twice over: 018's 94 sets of 1.1 GB are 107 GB.)
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

#include "judge/compare.h"
#include "judge/protocol.h"
#include "judge/sandbox.h"
#include "problem/dtype.h"
#include "target/backend.h"
#include "util/error.h"

namespace ka {
namespace {

using json = nlohmann::json;
using EntryFn = int (*)(const TensorArg*, int);

struct Arg {
  int32_t dtype = 0;
  std::vector<int64_t> shape;
  bool scalar = false, output = false;
  size_t nbytes = 0;
  std::vector<std::byte> host;  // inputs: data from the judge (a kept set: scalars only); outputs: unused
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

class Worker {
 public:
  Worker(int in, int out, std::unique_ptr<Backend> b, json sandbox)
      : in_(in), out_(out), be_(std::move(b)), sandbox_(std::move(sandbox)) {}
  ~Worker() {
    for (auto& [id, s] : sets_)
      for (void* p : s.pristine)
        if (p) be_->release(p);
  }

  int loop() {
    if (!wire::write_message(out_, {{"ok", true}, {"target", be_->name()}, {"device", be_->device_info()},
                                    {"sandbox", sandbox_}}))
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

  struct CachedSet {
    std::vector<Arg> args;          // inputs (host bytes of scalars only), then outputs (dtype/shape)
    std::vector<void*> pristine;    // device copy of each non-scalar input, parallel to args
    std::vector<Tensor> reference;  // the reference outputs, in output order
  };
  std::map<int64_t, CachedSet> sets_;


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

  // "put": {"set": ID, "args": [...] as for "run"} with the inputs' bytes and then each output's
  // reference bytes as payload. A set that does not fit on the device is refused with "no_room"
  // (the judge then sends it with every call instead).
  void put(const json& h) {
    const int64_t id = h.at("set");
    CachedSet s;
    s.args = read_args(h);
    for (const Arg& a : s.args) {
      if (!a.output) continue;
      Tensor t;
      t.dtype = static_cast<DType>(a.dtype);
      t.shape = a.shape;
      t.data.resize(a.nbytes);
      if (!wire::read_full(in_, t.data.data(), a.nbytes)) throw BackendFault{"runtime_error", "short payload", true};
      s.reference.push_back(std::move(t));
    }
    s.pristine.assign(s.args.size(), nullptr);
    try {
      for (size_t i = 0; i < s.args.size(); ++i) {
        if (s.args[i].output || s.args[i].scalar) continue;
        s.pristine[i] = be_->alloc(s.args[i].nbytes);
        be_->to_device(s.pristine[i], s.args[i].host.data(), s.args[i].nbytes);
      }
      be_->sync();
    } catch (const BackendFault& f) {
      for (void* p : s.pristine)
        if (p) be_->release(p);
      if (f.fatal) throw;
      wire::write_message(out_, {{"ok", false}, {"verdict", "unavailable"}, {"no_room", true}, {"fatal", false},
                                 {"message", one_line(f.message)}});
      return;
    }
    for (size_t i = 0; i < s.args.size(); ++i)
      if (s.pristine[i]) std::vector<std::byte>().swap(s.args[i].host);  // the device copy is the one kept
    auto old = sets_.find(id);
    if (old != sets_.end())
      for (void* p : old->second.pristine)
        if (p) be_->release(p);
    sets_[id] = std::move(s);
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
  std::vector<std::byte> stage_a_, stage_b_;

  static Tolerance tolerance_from(const json& j) {
    Tolerance t;
    t.max_atol = j.value("max_atol", t.max_atol);
    t.max_rtol = j.value("max_rtol", t.max_rtol);
    t.required_matched_ratio = j.value("required_matched_ratio", t.required_matched_ratio);
    if (j.contains("max_error_cap") && j["max_error_cap"].is_number()) t.max_error_cap = j["max_error_cap"].get<double>();
    t.allow_negative_inf = j.value("allow_negative_inf", false);
    return t;
  }

  // Check mode on a kept set: fresh buffers filled from the pristine copies, the call, then the
  // comparison here. Reply: {"ok":true,"input_written":INDEX} or {"ok":true,"compare":[per output]}.
  void check_cached(CachedSet& s, const json& h) {
    std::vector<Arg>& args = s.args;
    std::vector<void*> bufs(args.size(), nullptr);
    struct Free {
      Backend& b;
      std::vector<void*>& v;
      ~Free() {
        for (void* p : v)
          if (p) b.release(p);
      }
    } free_all{*be_, bufs};
    std::vector<TensorArg> t;
    for (size_t i = 0; i < args.size(); ++i) {
      Arg& a = args[i];
      if (a.scalar) {
        t.push_back(make_arg(a, a.host.data()));
        continue;
      }
      bufs[i] = be_->alloc(a.nbytes);
      if (a.output) be_->fill(bufs[i], 0xff, a.nbytes);
      else be_->copy(bufs[i], s.pristine[i], a.nbytes);
      t.push_back(make_arg(a, bufs[i]));
    }
    be_->sync();
    call(t);
    be_->sync();
    for (size_t i = 0; i < args.size(); ++i) {
      if (args[i].output || args[i].scalar) continue;
      if (!same_on_device(bufs[i], s.pristine[i], args[i].nbytes)) {
        wire::write_message(out_, {{"ok", true}, {"input_written", i}});
        return;
      }
    }
    const Tolerance tol = tolerance_from(h.value("tolerance", json::object()));
    json cmp = json::array();
    size_t k = 0;
    for (size_t i = 0; i < args.size(); ++i) {
      if (!args[i].output) continue;
      Tensor out;
      out.dtype = static_cast<DType>(args[i].dtype);
      out.shape = args[i].shape;
      out.data.resize(args[i].nbytes);
      be_->to_host(out.data.data(), bufs[i], args[i].nbytes);
      CompareResult c = compare_output(out, s.reference[k++], tol);
      cmp.push_back({{"ok", c.ok}, {"max_abs_err", c.max_abs_err}, {"max_rel_err", c.max_rel_err},
                     {"matched_ratio", c.matched_ratio}, {"values", c.values}, {"nonfinite", c.nonfinite},
                     {"never_written", c.never_written}, {"reason", c.reason}});
    }
    wire::write_message(out_, {{"ok", true}, {"compare", cmp}});
  }

  void run(const json& h) {
    std::vector<Arg> sent;
    std::vector<Arg>* argp = &sent;
    std::vector<void*>* kept = nullptr;
    if (h.contains("set")) {
      auto it = sets_.find(h["set"].get<int64_t>());
      if (it == sets_.end()) {
        wire::write_message(out_, {{"ok", false}, {"verdict", "runtime_error"}, {"missing_set", true}, {"fatal", false},
                                   {"message", "this worker does not hold that input set"}});
        return;
      }
      if (h.value("mode", "check") == "check") return check_cached(it->second, h);
      argp = &it->second.args;
      kept = &it->second.pristine;
    } else {
      sent = read_args(h);
    }
    std::vector<Arg>& args = *argp;
    std::string mode = h.value("mode", "check");
    std::vector<void*> bufs(args.size(), nullptr);
    struct Free {
      Backend& b;
      std::vector<void*>& v;
      ~Free() {
        for (void* p : v)
          if (p) b.release(p);
      }
    } free_all{*be_, bufs};
    if (mode == "check") {
      std::vector<TensorArg> t;
      for (size_t i = 0; i < args.size(); ++i) {
        Arg& a = args[i];
        if (a.scalar) {
          t.push_back(make_arg(a, a.host.data()));
          continue;
        }
        bufs[i] = be_->alloc(a.nbytes);
        if (a.output) be_->fill(bufs[i], 0xff, a.nbytes);
        else be_->to_device(bufs[i], a.host.data(), a.nbytes);
        t.push_back(make_arg(a, bufs[i]));
      }
      be_->sync();
      call(t);
      be_->sync();
      std::vector<std::pair<const void*, size_t>> payload;
      std::vector<std::vector<std::byte>> back(args.size());
      for (int pass = 0; pass < 2; ++pass)  // outputs first, then inputs (to verify they are unchanged)
        for (size_t i = 0; i < args.size(); ++i) {
          if (args[i].output != (pass == 0) || args[i].scalar) continue;
          back[i].resize(args[i].nbytes);
          be_->to_host(back[i].data(), bufs[i], args[i].nbytes);
          payload.emplace_back(back[i].data(), back[i].size());
        }
      size_t total = 0;
      for (auto& p : payload) total += p.second;
      wire::write_message(out_, {{"ok", true}, {"payload", total}}, payload);
      return;
    }
    // Time mode: a pristine device copy of each input, and a pool per argument from which call i
    // takes its buffers at byte offset 256·i (fresh pointers, pristine data, zeroed outputs).
    int warmup = h.value("warmup", 10), iterations = h.value("iterations", 50);
    const size_t calls = static_cast<size_t>(warmup + iterations);
    std::vector<void*> pristine(args.size(), nullptr);
    struct FreeP {
      Backend& b;
      std::vector<void*>& v;
      ~FreeP() {
        for (void* p : v)
          if (p) b.release(p);
      }
    } free_p{*be_, pristine};
    for (size_t i = 0; i < args.size(); ++i) {
      if (args[i].scalar) continue;
      bufs[i] = be_->alloc(args[i].nbytes + 256 * (calls - 1));
      if (!args[i].output && !kept) {
        pristine[i] = be_->alloc(args[i].nbytes);
        be_->to_device(pristine[i], args[i].host.data(), args[i].nbytes);
      }
    }
    const std::vector<void*>& source = kept ? *kept : pristine;
    be_->sync();
    std::vector<TensorArg> t(args.size());
    auto setup = [&](int call_index) {
      for (size_t i = 0; i < args.size(); ++i) {
        if (args[i].scalar) {
          t[i] = make_arg(args[i], args[i].host.data());
          continue;
        }
        void* p = static_cast<char*>(bufs[i]) + 256 * static_cast<size_t>(call_index);
        if (args[i].output) be_->fill(p, 0, args[i].nbytes);
        else be_->copy(p, source[i], args[i].nbytes);
        t[i] = make_arg(args[i], p);
      }
    };
    TimingResult r = be_->time_calls(warmup, iterations, setup, [&] { call(t); });
    be_->sync();
    wire::write_message(out_, {{"ok", true}, {"samples_us", r.samples_us}, {"activity", r.activity}});
  }
};

}  // namespace

int worker_main(const std::string& target, const SandboxPolicy& sandbox) {
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
  return Worker(in, out, std::move(be), json{{"on", jail.on}, {"off", jail.off}}).loop();
}

}  // namespace ka
