// agents/agents.cpp — the registry of built-in agents (the four search agents of builtin.h and the
// library agent of library.h).
#include "agents/agent.h"
#include "agents/builtin.h"
#include "agents/library.h"
#include "util/error.h"

namespace ka {

std::vector<std::string> search_agents() { return {"explorer", "exploiter", "modeler", "transfer"}; }
std::vector<std::string> builtin_agents() {
  auto a = search_agents();
  a.push_back("library");
  return a;
}

std::unique_ptr<Agent> make_agent(const std::string& kind, uint64_t seed) {
  if (kind == "explorer") return std::make_unique<search::Explorer>(seed);
  if (kind == "exploiter") return std::make_unique<search::Exploiter>(seed);
  if (kind == "modeler") return std::make_unique<search::Modeler>(seed);
  if (kind == "transfer") return std::make_unique<search::Transfer>(seed);
  if (kind == "library") return library::make_library_agent(seed);
  user_error("unknown agent '{}' (built-in agents: explorer, exploiter, modeler, transfer, library)", kind);
}

}  // namespace ka
