// cli/cmd_calibrate.cpp — `kernelarc calibrate [--json] [--force]`: the measured ceilings of the
// device (copy bandwidth, dense matmul rate per dtype) beside the vendor's datasheet figures.
#include <fmt/format.h>

#include <algorithm>

#include "cli/commands.h"
#include "sol/calibrate.h"
#include "target/backend.h"

namespace ka::cli {
namespace {

struct CalArgs {
  bool json_out = false, force = false;
  std::string target;
};

void run_calibrate(const CalArgs& a) {
  std::string target = a.target.empty() ? (cuda_target_built() ? "cuda" : "host") : a.target;
  nlohmann::json cal = calibrate_device(target, a.force);
  if (a.json_out) {
    fmt::print("{}\n", cal.dump(1));
    return;
  }
  std::string name = cal["device"].value("name", "?");
  auto ds = datasheet_for(name);
  fmt::print("{} ({} target){}\n", name, target, cal.value("reused", false) ? " [stored calibration; --force to redo]" : "");
  fmt::print("key: {}\n", cal.value("key", ""));
  fmt::print("{:<22} {:>16} {:>16} {:>8}\n", "ceiling", "measured", ds ? "datasheet" : "datasheet (none)", "ratio");
  auto row = [&](const std::string& what, double meas, double sheet, std::string unit, double scale) {
    if (std::max(meas, sheet) < 1e12) {  // host figures: giga, not tera
      scale = 1e9;
      unit[0] = 'G';
    }
    std::string m = meas > 0 ? fmt::format("{:.1f} {}", meas / scale, unit) : "unavailable";
    std::string s = sheet > 0 ? fmt::format("{:.1f} {}", sheet / scale, unit) : "-";
    std::string r = meas > 0 && sheet > 0 ? fmt::format("{:.0f}%", 100 * meas / sheet) : "-";
    fmt::print("{:<22} {:>16} {:>16} {:>8}\n", what, m, s, r);
  };
  Ceilings c = ceilings_from(cal);
  row("copy bandwidth (r+w)", c.bandwidth_Bps, ds ? ds->bandwidth_Bps : 0, "TB/s", 1e12);
  static const std::pair<const char*, const char*> keys[] = {
      {"bfloat16", "bf16"}, {"float16", "fp16"}, {"float8_e4m3fn", "fp8"}, {"tf32", "tf32"}, {"float32", "fp32"}};
  for (auto [dtype, key] : keys) {
    double sheet = ds && ds->rate.count(key) ? ds->rate.at(key) : 0;
    row(fmt::format("{} matmul", key), c.rate.count(key) ? c.rate.at(key) : 0, sheet, "TFLOP/s", 1e12);
    if (cal.contains("matmul") && cal["matmul"].contains(dtype) && !cal["matmul"][dtype].value("available", false))
      fmt::print("  {}: {}\n", key, cal["matmul"][dtype].value("message", "unavailable"));
  }
  if (cal.contains("matmul_shape")) fmt::print("matmul: cuBLASLt, M=N=K={}, TN, random operands, median of {} after warm-up\n",
                                               cal["matmul_shape"][0].get<long long>(),
                                               cal.contains("copy") ? cal["copy"].value("iterations", 0) : 0);
}

}  // namespace

void register_calibrate(CLI::App& app) {
  static CalArgs a;
  auto* cmd = app.add_subcommand("calibrate", "Measure the device's ceilings (copy bandwidth, matmul rate per dtype)");
  cmd->add_flag("--json", a.json_out, "Print the calibration as JSON");
  cmd->add_flag("--force", a.force, "Measure again even when a calibration for this device is stored");
  cmd->add_option("--target", a.target, "cuda or host (default: cuda when built in)")->check(CLI::IsMember({"cuda", "host"}));
  cmd->callback([] { run_calibrate(a); });
}

}  // namespace ka::cli
