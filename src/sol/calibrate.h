// sol/calibrate.h — measured ceilings of the device a target runs on: device-to-device copy
// bandwidth (bytes read + written) and dense matmul rate per dtype (cuBLASLt, 8192³, TN), measured
// in a worker process (op "calibrate", Backend::calibrate) and stored in
// cache_root()/calibration.json keyed by device name, driver and clocks. Vendor datasheet figures
// are kept beside for display only; every bound uses the measured values.
#pragma once
#include <nlohmann/json.hpp>

#include <filesystem>
#include <map>
#include <optional>
#include <string>

#include "sol/bounds.h"

namespace ka {

struct Datasheet {
  const char* match;       // substring of the device name
  const char* label;
  double bandwidth_Bps;
  std::map<std::string, double> rate;  // rate key -> FLOP/s (dense)
};

// The datasheet row whose substring the device name contains (H200, H100, B200, A100).
std::optional<Datasheet> datasheet_for(const std::string& device_name);

// "name|driver|clock_khz|memory_clock_khz" from a worker's device description.
std::string calibration_key(const nlohmann::json& device);

// The measured ceilings (rate keys bf16, fp16, fp8, tf32, fp32) from a stored calibration.
Ceilings ceilings_from(const nlohmann::json& calibration);

std::filesystem::path calibration_file();
// The stored calibration for this device, if any.
std::optional<nlohmann::json> load_calibration(const nlohmann::json& device);
// Measures (or reuses unless force) the ceilings of the target's device. UserError when the
// target cannot run or cannot calibrate.
nlohmann::json calibrate_device(const std::string& target, bool force, const nlohmann::json& request = {});

}  // namespace ka
