// sol/calibrate.cpp — running the calibration in a worker and keeping its results.
#include "sol/calibrate.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "judge/worker_client.h"
#include "util/error.h"
#include "util/files.h"

namespace ka {

using json = nlohmann::json;

std::optional<Datasheet> datasheet_for(const std::string& name) {
  static const Datasheet rows[] = {
      {"H200", "H200 SXM (datasheet, dense)", 4.8e12,
       {{"bf16", 989e12}, {"fp16", 989e12}, {"fp8", 1979e12}, {"tf32", 494e12}, {"fp32", 67e12}}},
      {"H100", "H100 SXM (datasheet, dense)", 3.35e12,
       {{"bf16", 989e12}, {"fp16", 989e12}, {"fp8", 1979e12}, {"tf32", 494e12}, {"fp32", 67e12}}},
      {"B200", "B200 (datasheet, dense)", 8.0e12,
       {{"bf16", 2250e12}, {"fp16", 2250e12}, {"fp8", 4500e12}, {"tf32", 1100e12}, {"fp32", 75e12}}},
      {"A100", "A100 SXM 80GB (datasheet, dense)", 2.039e12,
       {{"bf16", 312e12}, {"fp16", 312e12}, {"tf32", 156e12}, {"fp32", 19.5e12}}},
  };
  for (const auto& r : rows)
    if (name.find(r.match) != std::string::npos) return r;
  return std::nullopt;
}

std::string calibration_key(const json& d) {
  return fmt::format("{}|driver {}|clock {} kHz|memory clock {} kHz", d.value("name", "?"), d.value("driver", 0),
                     d.value("clock_khz", 0), d.value("memory_clock_khz", 0));
}

Ceilings ceilings_from(const json& cal) {
  Ceilings c;
  if (cal.contains("copy")) c.bandwidth_Bps = cal["copy"].value("bandwidth_Bps", 0.0);
  static const std::pair<const char*, const char*> keys[] = {
      {"bfloat16", "bf16"}, {"float16", "fp16"}, {"float8_e4m3fn", "fp8"}, {"tf32", "tf32"}, {"float32", "fp32"}};
  if (cal.contains("matmul"))
    for (auto [dtype, key] : keys)
      if (cal["matmul"].contains(dtype) && cal["matmul"][dtype].value("available", false))
        c.rate[key] = cal["matmul"][dtype].value("flops_per_s", 0.0);
  return c;
}

fs::path calibration_file() { return cache_root() / "calibration.json"; }

namespace {
json read_store() {
  if (!fs::exists(calibration_file())) return json::object();
  json j = json::parse(read_text(calibration_file()), nullptr, false);
  return j.is_object() ? j : json::object();
}
}  // namespace

std::optional<json> load_calibration(const json& device) {
  json store = read_store();
  std::string key = calibration_key(device);
  if (store.contains("entries") && store["entries"].contains(key)) return store["entries"][key];
  return std::nullopt;
}

json calibrate_device(const std::string& target, bool force, const json& request) {
  fs::create_directories(cache_root());
  WorkerClient w(target, cache_root() / "calibrate-worker.log");
  json device = w.hello().value("device", json::object());
  if (!force)
    if (auto c = load_calibration(device)) {
      (*c)["reused"] = true;
      return *c;
    }
  spdlog::info("calibrating {} ({} target): copy bandwidth and matmul rates, about a minute",
               device.value("name", "?"), target);
  WorkerReply r = w.calibrate(request.is_object() ? request : json::object(), std::chrono::minutes(10));
  w.stop();
  if (!r.ok) user_error("calibration failed: {} ({})", r.message, verdict_name(r.verdict));
  json cal = r.header.value("calibration", json::object());
  if (!cal.value("supported", false)) user_error("{}", cal.value("message", "this target cannot calibrate"));
  cal["key"] = calibration_key(device);
  cal["target"] = target;
  cal["measured_at"] = static_cast<long long>(std::time(nullptr));
  json store = read_store();
  store["entries"][cal["key"].get<std::string>()] = cal;
  write_atomic(calibration_file(), store.dump(1));
  cal["reused"] = false;
  return cal;
}

}  // namespace ka
