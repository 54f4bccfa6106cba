// families/family.h — kernel families as data. A family is a folder under families/ holding
// family.json (knobs with their domains, constraints over knobs and problem axes, the problems it
// applies to, defines it takes from the problem) and a parameterised source. Instantiating a
// family for a problem and knob values gives a Candidate: the source with `#define KA_<KNOB> v`
// lines (and the problem defines) prepended. A new family is added by adding a folder.
//
// family.json:
//   {"name": "rmsnorm_cuda", "target": "cuda" | "host", "source": "rmsnorm.cu", "entry": "run",
//    "description": "...",
//    "applies_to": {"op_types": ["rmsnorm", "fused_add_rmsnorm"], "dtypes": ["bfloat16"],
//                   "requires_axes": ["hidden_size"]},
//    "knobs": {"VEC": [1, 2, 4, 8], "THREADS": [32, 64, 128, 256]},
//    "constraints": ["hidden_size % (VEC * 8) == 0", "THREADS * VEC * 8 <= 4 * hidden_size"],
//    "defines": {"HIDDEN": "axis:hidden_size",            // a const axis value
//                "FUSED_ADD": "has_input:residual",        // 1 if the definition has this input
//                "EPS": "reference:EPS\\s*=\\s*([0-9.eE+-]+)|1e-6"},  // regex on the reference, default
//    "compile_options": {"cuda_cflags": ["-O3"], "cflags": [], "ld_flags": []},
//    "sources": ["mainloop.cuh"],                      // optional: more files of the folder
//    "includes": ["kernelarc/device/reduce.cuh"]}      // optional: device-layer headers it uses
//
// A family is made of parts: `source` is the entry file (the defines are prepended to it);
// `sources` lists headers of the family folder it includes with #include "..." (.cuh, .h, .hpp,
// .inc: pieces of the one source, without include guards, e.g. one kernel each or a shared
// mainloop); `includes` lists the headers of the device layer (include/kernelarc/device/) it
// includes with #include <kernelarc/device/...>. The headers those include are added (their
// closure); an entry or folder header that includes a layer header the closure lacks is refused.
// A candidate is the entry with its folder headers expanded in place (one file, so that the
// knob defines reach every piece and piecewise composition works) plus the layer headers as
// further sources, so the judge's build, its cache key and exported solutions see exactly the code
// that was instantiated.
//
// Rules (each fault is a UserError naming family.json and the field): unknown fields are refused;
// knob and define names are identifiers; a knob's domain is a non-empty list of distinct integers,
// kept in file order; a constraint may name knobs and the axes listed in requires_axes only (a
// family applies to a problem only when each of those is a const axis, so var axes are never
// usable); a define spec is axis:NAME, has_input:NAME or reference:REGEX|DEFAULT (the default
// follows the last '|'; the regex needs a capture group; without a default an unmatched
// reference is an error). "generator": "graph" makes a generated family (see Family::generator).
// The shipped families live under families/ (resource_path("families")).
#pragma once
#include <nlohmann/json.hpp>

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "problem/expr.h"
#include "problem/problem.h"
#include "solution/solution.h"

namespace ka {

using Knobs = std::map<std::string, int64_t>;

struct Family {
  std::string name, target, description, entry = "run";
  std::filesystem::path dir;
  std::string source_name, source;              // the entry file: name and contents
  std::vector<SourceFile> parts;                // family-folder headers ("sources"), by file name
  // The entry with its parts expanded where it includes them: the one source a candidate carries
  // (before its defines), and the runtime a generator reads.
  std::string whole_source() const;
  std::vector<SourceFile> layer;                // device-layer headers: path under include/, contents
  std::vector<std::pair<std::string, std::vector<int64_t>>> knobs;  // in file order
  std::vector<Expr> constraints;
  std::vector<std::string> op_types, dtypes, requires_axes;
  std::map<std::string, std::string> defines;   // name -> spec
  nlohmann::json compile_options;
  // Seeds: points measured good somewhere (family.json "seeds": [{"knobs": {...}, "why": "..."}]),
  // each with the evidence; the explorer proposes those valid for a problem before filling the
  // space. Knob names and domains are checked at load; constraints only per problem.
  struct Seed {
    Knobs knobs;
    std::string why;
  };
  std::vector<Seed> seeds;
  // "graph": the source is a runtime and the candidate's code is generated per problem from its
  // captured graph (graph/generate.h); such a family applies to every problem that captures and
  // lowers (applies_to.op_types may then be ["*"]).
  std::string generator;

  bool applies_to(const Problem& p) const;
  // The problem-derived defines (UserError when a spec cannot be satisfied).
  std::map<std::string, std::string> problem_defines(const Problem& p) const;
  // True when knobs name exactly the family's knobs, each value lies in its domain, and every
  // constraint holds for this problem. Constraints see the knobs and the problem's const axes
  // (and derived axes computed from const axes only); var axes are not usable (UserError when a
  // constraint names something the problem lacks). A constraint that divides by zero is false.
  bool valid(const Knobs& k, const Problem& p) const;
  // Every valid point of the space (the spaces are small: tens to thousands of points).
  std::vector<Knobs> space(const Problem& p) const;
  // The candidate for these knobs (UserError when they are not valid for the problem). `extra`:
  // generated defines (agents/agent.h, Proposal::defines), written as `#define KA_<NAME> <value>`
  // after the knob defines; the candidate's name then ends with a short hash of them. UserError
  // when a name is not an identifier or collides with a knob or problem define, or a value is
  // empty or spans lines.
  Candidate instantiate(const Knobs& k, const Problem& p, const std::map<std::string, std::string>& extra = {}) const;
  // The domain of a knob (nullptr when the family has no such knob).
  const std::vector<int64_t>* domain(const std::string& knob) const;
};

// The value of an axis that is the same for every workload: a const axis, or a derived axis whose
// expression uses const axes only. nullopt for var axes and unknown names.
std::optional<int64_t> const_axis_value(const Definition& d, const std::string& name);

// Loads every family folder under `root` (default: the shipped families/ folder).
std::vector<Family> load_families(const std::filesystem::path& root = {});
Family load_family(const std::filesystem::path& dir);
// "THREADS32_VEC8": knob names and values in name order, joined by '_' (safe in file names).
std::string knobs_str(const Knobs& k);

}  // namespace ka
