// families/family.cpp — loading family.json folders, checking knob points against a problem, and
// instantiating a family into a Candidate. Every fault of a family folder is a UserError naming the
// file and the field.
#include "families/family.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <functional>
#include <regex>
#include <cstring>
#include <set>
#include <sstream>

#include "graph/generate.h"
#include "util/error.h"
#include "util/files.h"
#include "util/json.h"
#include "util/hash.h"
#include "util/resources.h"

namespace ka {
namespace {

using ojson = nlohmann::ordered_json;

bool is_identifier(const std::string& s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  return true;
}

std::string string_field(const ojson& j, const char* key, const std::string& where, bool required,
                         const std::string& dflt = "") {
  if (!j.contains(key)) {
    if (required) user_error("{}: missing field '{}'", where, key);
    return dflt;
  }
  if (!j[key].is_string() || j[key].get<std::string>().empty())
    user_error("{}: field '{}' must be a non-empty string", where, key);
  return j[key].get<std::string>();
}

std::vector<std::string> string_list(const ojson& j, const char* key, const std::string& where,
                                     const std::string& path) {
  std::vector<std::string> out;
  if (!j.contains(key)) return out;
  const ojson& a = j[key];
  if (!a.is_array()) user_error("{}: field '{}{}' must be a list of strings", where, path, key);
  for (size_t i = 0; i < a.size(); ++i) {
    if (!a[i].is_string()) user_error("{}: field '{}{}[{}]' must be a string", where, path, key, i);
    out.push_back(a[i].get<std::string>());
  }
  return out;
}

// "reference:REGEX|DEFAULT" → (REGEX, DEFAULT); the default follows the last '|'.
std::pair<std::string, std::optional<std::string>> split_reference_spec(const std::string& body) {
  auto bar = body.rfind('|');
  if (bar == std::string::npos) return {body, std::nullopt};
  return {body.substr(0, bar), body.substr(bar + 1)};
}

// A define's value goes into a #define line: one line, printable.
bool safe_define_value(const std::string& v) {
  if (v.empty()) return false;
  for (char c : v)
    if (c == '\n' || c == '\r' || c == '\\' || !std::isprint(static_cast<unsigned char>(c))) return false;
  return true;
}

std::string family_where(const Family& f) { return (f.dir / "family.json").string(); }

// The entry text with each `#include "PART"` line of a family-folder header replaced by the
// header's text (recursively; a header is expanded where it is included, as often as it is
// included: parts carry no include guards, they are pieces of the one source).
std::string expand_parts(const std::string& text, const std::vector<SourceFile>& parts, int depth = 0) {
  static const std::regex re(R"re(^\s*#\s*include\s*"([^"]+)")re");
  if (depth > 16) user_error("family parts include each other more than 16 levels deep");
  std::istringstream in(text);
  std::string line, out;
  std::smatch m;
  while (std::getline(in, line)) {
    const SourceFile* part = nullptr;
    if (std::regex_search(line, m, re))
      for (const auto& p : parts)
        if (p.path == m[1]) part = &p;
    if (!part) {
      out += line + "\n";
      continue;
    }
    out += "// ---- " + part->path + " ----\n" + expand_parts(part->content, parts, depth + 1);
    out += "// ---- end of " + part->path + " ----\n";
  }
  return out;
}

// The layer headers a text includes: `#include <kernelarc/device/NAME>` lines.
std::vector<std::string> layer_includes(const std::string& text) {
  static const std::regex re(R"(^\s*#\s*include\s*<(kernelarc/device/[^>]+)>)");
  std::vector<std::string> out;
  std::istringstream in(text);
  std::string line;
  std::smatch m;
  while (std::getline(in, line))
    if (std::regex_search(line, m, re)) out.push_back(m[1]);
  return out;
}

bool is_header_name(const std::string& n) {
  for (const char* ext : {".cuh", ".h", ".hpp", ".inc"})
    if (n.size() > std::strlen(ext) && n.compare(n.size() - std::strlen(ext), std::strlen(ext), ext) == 0) return true;
  return false;
}

// "sources" (family-folder headers) and "includes" (device-layer headers with their closure).
void load_parts(Family& f, const ojson& j, const std::string& where) {
  for (const auto& n : string_list(j, "sources", where, "")) {
    if (n.find('/') != std::string::npos || n.find("..") != std::string::npos || !is_header_name(n))
      user_error("{}: field 'sources': '{}' must be a header file name (.cuh, .h, .hpp, .inc) in the family folder", where, n);
    if (n == f.source_name) user_error("{}: field 'sources': '{}' is the entry file ('source')", where, n);
    if (!fs::is_regular_file(f.dir / n)) user_error("{}: field 'sources': no file '{}' in {}", where, n, f.dir.string());
    f.parts.push_back({n, read_text(f.dir / n)});
  }
  const fs::path inc = resource_path("include");
  std::vector<std::string> todo = string_list(j, "includes", where, "");
  for (const auto& n : todo)
    if (n.rfind("kernelarc/device/", 0) != 0 || n.find("..") != std::string::npos)
      user_error("{}: field 'includes': '{}' is not a device-layer header (kernelarc/device/...)", where, n);
  std::set<std::string> listed;
  while (!todo.empty()) {
    const std::string n = todo.back();
    todo.pop_back();
    if (!listed.insert(n).second) continue;
    if (!fs::is_regular_file(inc / n)) user_error("{}: field 'includes': no header '{}' under {}", where, n, inc.string());
    f.layer.push_back({n, read_text(inc / n)});
    for (const auto& m : layer_includes(f.layer.back().content)) todo.push_back(m);
  }
  std::sort(f.layer.begin(), f.layer.end(), [](const SourceFile& a, const SourceFile& b) { return a.path < b.path; });
  std::vector<const SourceFile*> own;
  SourceFile entry{f.source_name, f.source};
  own.push_back(&entry);
  for (const auto& p : f.parts) own.push_back(&p);
  for (const SourceFile* s : own)
    for (const auto& m : layer_includes(s->content))
      if (!listed.count(m))
        user_error("{}: field 'includes': {} includes <{}>, which 'includes' does not list", where, s->path, m);
}

}  // namespace

std::optional<int64_t> const_axis_value(const Definition& d, const std::string& name) {
  std::set<std::string> visiting;
  std::function<std::optional<int64_t>(const std::string&)> value = [&](const std::string& n) -> std::optional<int64_t> {
    const AxisDef* a = d.axis(n);
    if (!a) return std::nullopt;
    if (a->kind == AxisDef::Const) return a->value;
    if (a->kind != AxisDef::Derived || !a->expr || !visiting.insert(n).second) return std::nullopt;
    try {
      bool missing = false;
      Value v = a->expr->eval([&](const std::string& m) -> std::optional<Value> {
        auto x = value(m);
        if (!x) {
          missing = true;
          return std::nullopt;
        }
        return Value::of(*x);
      });
      visiting.erase(n);
      if (missing || !v.is_int) return std::nullopt;
      return v.i;
    } catch (const ExprError&) {
      visiting.erase(n);
      return std::nullopt;
    }
  };
  return value(name);
}

std::string knobs_str(const Knobs& k) {
  std::string s;
  for (const auto& [n, v] : k) {
    if (!s.empty()) s += '_';
    s += fmt::format("{}{}", n, v);
  }
  return s;
}

namespace {

// knobs, in file order
void parse_knobs(const ojson& j, const std::string& where, Family& f) {
  if (!j.contains("knobs")) user_error("{}: missing field 'knobs'", where);
  const ojson& kn = j["knobs"];
  if (!kn.is_object() || kn.empty()) user_error("{}: field 'knobs' must be a non-empty object of name: [values]", where);
  for (const auto& [name, dom] : kn.items()) {
    if (!is_identifier(name)) user_error("{}: field 'knobs.{}': a knob name must be an identifier", where, name);
    if (!dom.is_array()) user_error("{}: field 'knobs.{}' must be a list of integers", where, name);
    if (dom.empty()) user_error("{}: field 'knobs.{}': empty domain (list at least one value)", where, name);
    std::vector<int64_t> vals;
    for (size_t i = 0; i < dom.size(); ++i) {
      if (!dom[i].is_number_integer()) user_error("{}: field 'knobs.{}[{}]' must be an integer, got {}", where, name, i, dom[i].dump());
      int64_t v = dom[i].get<int64_t>();
      if (std::find(vals.begin(), vals.end(), v) != vals.end())
        user_error("{}: field 'knobs.{}[{}]': duplicate value {}", where, name, i, v);
      vals.push_back(v);
    }
    f.knobs.emplace_back(name, std::move(vals));
  }
}

// defines: NAME: "axis:AXIS" | "has_input:NAME" | "reference:REGEX|DEFAULT"
void parse_defines(const ojson& j, const std::string& where, Family& f) {
  if (j.contains("defines")) {
    const ojson& d = j["defines"];
    if (!d.is_object()) user_error("{}: field 'defines' must be an object of NAME: spec", where);
    for (const auto& [name, spec] : d.items()) {
      const std::string fp = "defines." + name;
      if (!is_identifier(name)) user_error("{}: field '{}': a define name must be an identifier", where, fp);
      if (f.domain(name)) user_error("{}: field '{}': '{}' is also a knob", where, fp, name);
      if (!spec.is_string()) user_error("{}: field '{}' must be a string spec", where, fp);
      const std::string s = spec.get<std::string>();
      auto colon = s.find(':');
      const std::string kind = colon == std::string::npos ? s : s.substr(0, colon);
      const std::string body = colon == std::string::npos ? "" : s.substr(colon + 1);
      if (kind == "axis") {
        if (body.empty()) user_error("{}: field '{}': 'axis:' needs an axis name", where, fp);
      } else if (kind == "has_input") {
        if (body.empty()) user_error("{}: field '{}': 'has_input:' needs an input name", where, fp);
      } else if (kind == "reference") {
        auto [re, dflt] = split_reference_spec(body);
        if (re.empty()) user_error("{}: field '{}': 'reference:' needs a regular expression", where, fp);
        try {
          std::regex r(re);
          if (r.mark_count() < 1) user_error("{}: field '{}': the regular expression needs a capture group", where, fp);
        } catch (const std::regex_error& e) {
          user_error("{}: field '{}': bad regular expression '{}': {}", where, fp, re, e.what());
        }
        if (dflt && !safe_define_value(*dflt))
          user_error("{}: field '{}': the default after '|' must be a non-empty one-line value", where, fp);
      } else {
        user_error("{}: field '{}': unknown spec '{}' (use axis:NAME, has_input:NAME or reference:REGEX|DEFAULT)", where,
                   fp, s);
      }
      f.defines[name] = s;
    }
  }
}

// constraints: over knobs and the required (const) axes
void parse_constraints(const ojson& j, const std::string& where, Family& f) {
  std::vector<std::string> cons = string_list(j, "constraints", where, "");
  for (size_t i = 0; i < cons.size(); ++i) {
    Expr e;
    try {
      e = Expr::parse(cons[i]);
    } catch (const ExprError& err) {
      user_error("{}: field 'constraints[{}]': bad expression '{}' at character {}: {}", where, i, cons[i], err.pos + 1,
                 err.what());
    }
    for (const auto& n : e.names())
      if (!f.domain(n) && std::find(f.requires_axes.begin(), f.requires_axes.end(), n) == f.requires_axes.end())
        user_error("{}: field 'constraints[{}]': '{}' is neither a knob nor an axis listed in applies_to.requires_axes "
                   "(in '{}')",
                   where, i, n, cons[i]);
    f.constraints.push_back(std::move(e));
  }
}

// compile_options
void parse_compile_options(const ojson& j, const std::string& where, Family& f) {
  f.compile_options = nlohmann::json::object();
  if (j.contains("compile_options")) {
    const ojson& co = j["compile_options"];
    if (!co.is_object()) user_error("{}: field 'compile_options' must be an object", where);
    for (const auto& [k, v] : co.items()) {
      if (k != "cflags" && k != "cuda_cflags" && k != "ld_flags") user_error("{}: unknown field 'compile_options.{}'", where, k);
      f.compile_options[k] = string_list(co, k.c_str(), where, "compile_options.");
    }
  }
}

// seeds: [{"knobs": {NAME: value, ...every knob...}, "why": "evidence"}]
void parse_seeds(const ojson& j, const std::string& where, Family& f) {
  if (j.contains("seeds")) {
    const ojson& sd = j["seeds"];
    if (!sd.is_array()) user_error("{}: field 'seeds' must be a list of {{\"knobs\": {{...}}, \"why\": \"...\"}}", where);
    for (size_t i = 0; i < sd.size(); ++i) {
      const ojson& e = sd[i];
      const std::string at = fmt::format("seeds[{}]", i);
      if (!e.is_object()) user_error("{}: field '{}' must be an object", where, at);
      for (const auto& [k, v] : e.items())
        if (k != "knobs" && k != "why") user_error("{}: unknown field '{}.{}'", where, at, k);
      if (!e.contains("why") || !e["why"].is_string() || e["why"].get<std::string>().empty())
        user_error("{}: field '{}.why' must say where the point was measured good (a non-empty string)", where, at);
      if (!e.contains("knobs") || !e["knobs"].is_object()) user_error("{}: field '{}.knobs' must be an object", where, at);
      Family::Seed s;
      s.why = e["why"].get<std::string>();
      for (const auto& [name, v] : e["knobs"].items()) {
        const auto* dom = f.domain(name);
        if (!dom) user_error("{}: field '{}.knobs.{}': the family has no knob '{}'", where, at, name, name);
        if (!v.is_number_integer() || std::find(dom->begin(), dom->end(), v.get<int64_t>()) == dom->end())
          user_error("{}: field '{}.knobs.{}': {} is not in the knob's domain", where, at, name, v.dump());
        s.knobs[name] = v.get<int64_t>();
      }
      for (const auto& [name, dom] : f.knobs)
        if (!s.knobs.count(name)) user_error("{}: field '{}.knobs' lacks knob '{}' (a seed names every knob)", where, at, name);
      f.seeds.push_back(std::move(s));
    }
  }
}

}  // namespace

Family load_family(const std::filesystem::path& dir) {
  Family f;
  f.dir = dir;
  const fs::path file = dir / "family.json";
  const std::string where = file.string();
  if (!fs::is_regular_file(file)) user_error("{}: no such file (a family folder needs a family.json)", where);
  const ojson j = parse_user_json(read_text(file), where);
  if (!j.is_object()) user_error("{}: the file must hold a JSON object, got {}", where, j.type_name());
  static const std::set<std::string> kFields{"name", "target", "source", "entry", "description", "applies_to",
                                             "knobs", "constraints", "defines", "compile_options", "seeds",
                                             "generator", "sources",
                                             "includes"};
  for (const auto& [k, v] : j.items())
    if (!kFields.count(k)) user_error("{}: unknown field '{}'", where, k);

  f.name = string_field(j, "name", where, true);
  if (!is_identifier(f.name)) user_error("{}: field 'name' must be an identifier ([A-Za-z_][A-Za-z0-9_]*), got '{}'", where, f.name);
  f.target = string_field(j, "target", where, true);
  if (f.target != "cuda" && f.target != "host")
    user_error("{}: field 'target' must be \"cuda\" or \"host\", got \"{}\"", where, f.target);
  f.source_name = string_field(j, "source", where, true);
  if (f.source_name.find('/') != std::string::npos || f.source_name.find("..") != std::string::npos)
    user_error("{}: field 'source' must be a file name in the family folder, got '{}'", where, f.source_name);
  if (!fs::is_regular_file(dir / f.source_name))
    user_error("{}: field 'source': no file '{}' in {}", where, f.source_name, dir.string());
  f.source = read_text(dir / f.source_name);
  load_parts(f, j, where);
  f.entry = string_field(j, "entry", where, false, "run");
  f.generator = string_field(j, "generator", where, false);
  if (!f.generator.empty() && f.generator != "graph")
    user_error("{}: field 'generator' must be \"graph\", got \"{}\"", where, f.generator);
  if (!is_identifier(f.entry)) user_error("{}: field 'entry' must be an identifier, got '{}'", where, f.entry);
  if (j.contains("description") && !j["description"].is_string())
    user_error("{}: field 'description' must be a string", where);
  f.description = j.value("description", std::string());

  // applies_to
  if (!j.contains("applies_to")) user_error("{}: missing field 'applies_to'", where);
  const ojson& at = j["applies_to"];
  if (!at.is_object()) user_error("{}: field 'applies_to' must be an object", where);
  for (const auto& [k, v] : at.items())
    if (k != "op_types" && k != "dtypes" && k != "requires_axes") user_error("{}: unknown field 'applies_to.{}'", where, k);
  f.op_types = string_list(at, "op_types", where, "applies_to.");
  if (f.op_types.empty()) user_error("{}: field 'applies_to.op_types' must list at least one op type", where);
  f.dtypes = string_list(at, "dtypes", where, "applies_to.");
  for (size_t i = 0; i < f.dtypes.size(); ++i)
    if (!parse_dtype(f.dtypes[i])) user_error("{}: field 'applies_to.dtypes[{}]': unknown dtype '{}'", where, i, f.dtypes[i]);
  f.requires_axes = string_list(at, "requires_axes", where, "applies_to.");

  parse_knobs(j, where, f);
  parse_defines(j, where, f);
  parse_constraints(j, where, f);
  parse_compile_options(j, where, f);
  parse_seeds(j, where, f);
  return f;
}

std::vector<Family> load_families(const std::filesystem::path& root_in) {
  const fs::path root = root_in.empty() ? resource_path("families") : root_in;
  if (!fs::is_directory(root)) user_error("{}: not a folder of kernel families", root.string());
  std::vector<fs::path> dirs;
  for (const auto& e : fs::directory_iterator(root))
    if (e.is_directory() && fs::is_regular_file(e.path() / "family.json")) dirs.push_back(e.path());
  std::sort(dirs.begin(), dirs.end());
  std::vector<Family> out;
  std::map<std::string, fs::path> seen;
  for (const auto& d : dirs) {
    Family f = load_family(d);
    if (auto it = seen.find(f.name); it != seen.end())
      user_error("{}: field 'name': family '{}' is also defined in {}", (d / "family.json").string(), f.name,
                 (it->second / "family.json").string());
    seen[f.name] = d;
    out.push_back(std::move(f));
  }
  return out;
}

const std::vector<int64_t>* Family::domain(const std::string& knob) const {
  for (const auto& [n, d] : knobs)
    if (n == knob) return &d;
  return nullptr;
}

std::string Family::whole_source() const { return expand_parts(source, parts); }

bool Family::applies_to(const Problem& p) const {
  if (!generator.empty()) return graph::check_lowering(p, whole_source(), target).ok();
  if (std::find(op_types.begin(), op_types.end(), p.def.op_type) == op_types.end()) return false;
  if (!dtypes.empty())
    for (const auto& t : p.def.inputs)
      if (std::find(dtypes.begin(), dtypes.end(), std::string(dtype_name(t.dtype))) == dtypes.end()) return false;
  for (const auto& a : requires_axes)
    if (!const_axis_value(p.def, a)) return false;
  return true;
}

std::map<std::string, std::string> Family::problem_defines(const Problem& p) const {
  std::map<std::string, std::string> out;
  for (const auto& [name, spec] : defines) {
    auto colon = spec.find(':');
    const std::string kind = spec.substr(0, colon), body = spec.substr(colon + 1);
    if (kind == "axis") {
      auto v = const_axis_value(p.def, body);
      if (!v)
        user_error("family '{}' ({}): define {} = '{}': problem '{}' has no const axis '{}'", this->name, family_where(*this),
                   name, spec, p.def.name, body);
      out[name] = std::to_string(*v);
    } else if (kind == "has_input") {
      bool has = std::any_of(p.def.inputs.begin(), p.def.inputs.end(), [&](const TensorDef& t) { return t.name == body; });
      out[name] = has ? "1" : "0";
    } else {  // reference
      auto [re, dflt] = split_reference_spec(body);
      std::smatch m;
      std::optional<std::string> v;
      if (std::regex_search(p.def.reference, m, std::regex(re)) && m.size() > 1 && m[1].matched) v = m[1].str();
      if (!v) v = dflt;
      if (!v)
        user_error("family '{}' ({}): define {} = '{}': the reference of problem '{}' does not match and no default is given",
                   this->name, family_where(*this), name, spec, p.def.name);
      if (!safe_define_value(*v))
        user_error("family '{}' ({}): define {} = '{}': the value taken from the reference of '{}' is not a one-line value",
                   this->name, family_where(*this), name, spec, p.def.name);
      out[name] = *v;
    }
  }
  return out;
}

bool Family::valid(const Knobs& k, const Problem& p) const {
  if (k.size() != knobs.size()) return false;
  for (const auto& [n, dom] : knobs) {
    auto it = k.find(n);
    if (it == k.end() || std::find(dom.begin(), dom.end(), it->second) == dom.end()) return false;
  }
  for (const auto& c : constraints) {
    std::string missing;
    try {
      Value v = c.eval([&](const std::string& n) -> std::optional<Value> {
        if (auto it = k.find(n); it != k.end()) return Value::of(it->second);
        if (auto a = const_axis_value(p.def, n)) return Value::of(*a);
        missing = n;
        return std::nullopt;
      });
      if (!v.truthy()) return false;
    } catch (const ExprError& e) {
      if (!missing.empty())
        user_error("family '{}' ({}): constraint '{}' uses '{}', which problem '{}' lacks as a const axis", name,
                   family_where(*this), c.source(), missing, p.def.name);
      return false;  // division by zero, overflow: not a usable point
    }
  }
  return true;
}

std::vector<Knobs> Family::space(const Problem& p) const {
  std::vector<Knobs> out;
  std::vector<size_t> idx(knobs.size(), 0);
  while (true) {
    Knobs k;
    for (size_t i = 0; i < knobs.size(); ++i) k[knobs[i].first] = knobs[i].second[idx[i]];
    if (valid(k, p)) out.push_back(std::move(k));
    // Odometer, last knob fastest.
    size_t i = knobs.size();
    while (i > 0) {
      --i;
      if (++idx[i] < knobs[i].second.size()) break;
      idx[i] = 0;
      if (i == 0) return out;
    }
    if (knobs.empty()) return out;
  }
}

Candidate Family::instantiate(const Knobs& k, const Problem& p, const std::map<std::string, std::string>& extra) const {
  if (!valid(k, p))
    user_error("family '{}': knobs {} are not a valid point for problem '{}'", name, knobs_str(k).empty() ? "{}" : knobs_str(k),
               p.def.name);
  Candidate c;
  c.name = name + "_" + knobs_str(k);
  c.definition = p.def.name;
  c.author = "kernelarc";
  c.description = fmt::format("{} (family {}, {})", description.empty() ? name : description, name, knobs_str(k));
  c.language = target == "host" ? "cpp" : "cuda_cpp";
  c.binding = "kernelarc";
  std::string text = fmt::format("// generated by KernelArc from family {}\n", name);
  for (const auto& [n, v] : problem_defines(p)) text += fmt::format("#define KA_{} {}\n", n, v);
  for (const auto& [n, dom] : knobs) text += fmt::format("#define KA_{} {}\n", n, k.at(n));
  if (!extra.empty()) {
    const auto pd = problem_defines(p);
    std::string all;
    for (const auto& [n, v] : extra) {
      if (!is_identifier(n) || domain(n) || pd.count(n))
        user_error("family '{}': generated define '{}' is not an identifier distinct from its knobs and problem defines",
                   name, n);
      if (v.empty() || v.find_first_of("\r\n") != std::string::npos)
        user_error("family '{}': generated define '{}' must be one non-empty line", name, n);
      text += fmt::format("#define KA_{} {}\n", n, v);
      all += n + "=" + v + "\n";
    }
    c.name += "_d" + sha256_hex(all).substr(0, 8);
  }
  const std::string whole = whole_source();
  text += "\n" + whole;
  if (!generator.empty()) {
    Knobs all = k;
    text += graph::generate_source(p, whole, all, target);
  }
  c.sources.push_back({source_name, std::move(text)});
  for (const auto& h : layer) c.sources.push_back(h);
  c.entry_file = source_name;
  c.entry_symbol = entry;
  c.destination_passing_style = true;
  auto list = [&](const char* key) {
    return compile_options.contains(key) ? compile_options[key].get<std::vector<std::string>>() : std::vector<std::string>{};
  };
  c.has_compile_options = true;
  c.cflags = list("cflags");
  c.cuda_cflags = compile_options.contains("cuda_cflags") ? list("cuda_cflags") : std::vector<std::string>{"-O3"};
  c.ld_flags = list("ld_flags");
  if (target == "host" && !compile_options.contains("cflags")) c.cflags = {"-O3"};
  return c;
}

}  // namespace ka
