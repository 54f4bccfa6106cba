// graph/load.h — reads a captured graph (graph.json and its constants.safetensors, the format of
// docs/graph-format.md) into the IR. Faults are UserErrors naming the file and the field.
#pragma once
#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>

#include "graph/ir.h"

namespace ka::graph {

// `dir` holds graph.json (and constants.safetensors when a constant is not inline).
Graph load_graph(const std::filesystem::path& dir);
// Parses an already-read graph.json; `dir` resolves constants.safetensors (may be empty when every
// constant is inline).
Graph parse_graph(const nlohmann::json& j, const std::string& where, const std::filesystem::path& dir);
Arg parse_arg(const nlohmann::json& j, const std::string& where);

}  // namespace ka::graph
