// test_malformed.cpp — runs the built `kernelarc problems` on every folder of tests/data/malformed
// (the valid problem tests/data/valid/base broken in exactly one way; regenerate both with
// tests/data/make_malformed.py) and checks the CLI contract for user errors: exit code 2, exactly one
// line on stderr, naming the offending file (definition.json; workload.jsonl with the line number;
// or the blob path) and saying what is wrong. Blob faults are reported as MISSING (exit 0) by plain
// `problems` and are errors under `problems --strict`.
#include "util/resources.h"
#include <gtest/gtest.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include "util/files.h"

extern char** environ;

namespace ka {
namespace {

namespace fs = std::filesystem;

struct CliRun {
  int exit_code = -1;
  std::string out, err;
};

// Runs the kernelarc binary with `args` (no shell), capturing stdout and stderr through files.
CliRun run_kernelarc(const std::vector<std::string>& args) {
  fs::path tmp = make_temp_dir("ka_malformed_");
  const std::string out_path = (tmp / "out").string(), err_path = (tmp / "err").string();
  std::vector<std::string> argv_s{KA_BINARY};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_addopen(&fa, 2, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  pid_t pid = 0;
  CliRun r;
  int rc = posix_spawn(&pid, argv[0], &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) {
    ADD_FAILURE() << "cannot run " << argv[0] << ": " << std::strerror(rc);
  } else {
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    r.out = read_text(out_path);
    r.err = read_text(err_path);
  }
  std::error_code ec;
  fs::remove_all(tmp, ec);
  return r;
}

const fs::path kMalformed = fs::path(KA_TEST_DATA) / "malformed";
const char* kBlob2 = "blobs/a3e7d5c1-9f2b-4c8e-b6a4-7e9d0c1b2a35.safetensors";  // workload line 2's blob

struct Case {
  const char* dir;
  const char* file;      // the file the message must name: definition.json, workload.jsonl or a blob
  int line;              // workload.jsonl line the message must name (0: none)
  const char* fragment;  // what the message must say
  bool blob = false;     // a blob fault: MISSING without --strict, an error with it
};

const Case kCases[] = {
    {"01_def_malformed_json", "definition.json", 0, "malformed JSON at line 13, column "},
    {"02_def_unknown_dtype", "definition.json", 0, "inputs.weight.dtype: unknown dtype 'bfloat17'"},
    {"03_def_axis_cycle", "definition.json", 0, "axes form a cycle"},
    {"04_def_expr_unknown_axis", "definition.json", 0, "axes.num_groups.expression refers to unknown axis 'group_size'"},
    {"05_def_missing_outputs", "definition.json", 0, "missing field 'outputs'"},
    {"06_def_name_not_string", "definition.json", 0, "field 'name' must be a string"},
    {"07_def_shape_unknown_axis", "definition.json", 0, "hidden_states.shape[1] names unknown axis 'hidden_dim'"},
    {"08_def_const_axis_not_integer", "definition.json", 0, "axes.hidden_size.value must be an integer"},
    {"09_def_unknown_axis_type", "definition.json", 0, "unknown axis type 'variable'"},
    {"10_def_bad_constraint", "definition.json", 0, "constraints[0]: bad expression"},
    {"11_def_negative_dimension", "definition.json", 0, "negative dimension -8"},
    {"12_def_entrypoint_not_in_reference", "definition.json", 0, "'make_inputs' is not defined in 'reference'"},
    {"13_def_dimension_wrong_type", "definition.json", 0, "a dimension must be an axis name or an integer"},
    {"14_def_reference_without_run", "definition.json", 0, "defines no function 'run'"},
    {"15_def_input_output_clash", "definition.json", 0, "'weight' is both an input and an output"},
    {"16_def_axis_expression_syntax", "definition.json", 0, "bad expression 'hidden_size // (4'"},
    {"17_def_axes_not_object", "definition.json", 0, "'axes' must be an object"},
    {"20_wl_malformed_json", "workload.jsonl", 2, "malformed JSON"},
    {"21_wl_missing_var_axis", "workload.jsonl", 2, "no value for var axis 'batch_size'"},
    {"22_wl_unknown_axis", "workload.jsonl", 2, "axes.seq_len: the definition has no such axis"},
    {"23_wl_constraint_violated", "workload.jsonl", 3, "constraint 'len_indptr == batch_size + 1' does not hold"},
    {"24_wl_unknown_input_type", "workload.jsonl", 2, "unknown input type 'randn'"},
    {"25_wl_custom_without_entrypoint", "workload.jsonl", 3, "no custom_inputs_entrypoint"},
    {"26_wl_duplicate_uuid", "workload.jsonl", 3, "appears twice"},
    {"27_wl_tolerance_wrong_type", "workload.jsonl", 2, "tolerance.max_atol must be a number"},
    {"28_wl_empty_file", "workload.jsonl", 0, "no workloads"},
    {"29_wl_expr_not_integer", "workload.jsonl", 1, "not an integer"},
    {"30_wl_negative_axis", "workload.jsonl", 3, "axes.batch_size is negative"},
    {"31_wl_axis_not_integer", "workload.jsonl", 2, "axes.batch_size must be an integer"},
    {"32_wl_line_not_object", "workload.jsonl", 2, "a workload must be a JSON object"},
    {"33_wl_missing_uuid", "workload.jsonl", 2, "missing field 'uuid'"},
    {"34_wl_scalar_value_not_number", "workload.jsonl", 2, "value must be a number or a boolean"},
    {"35_wl_input_not_in_definition", "workload.jsonl", 2, "inputs.bias: the definition has no such input"},
    {"36_wl_tolerance_ratio_above_one", "workload.jsonl", 2, "required_matched_ratio must be in [0, 1]"},
    {"40_blob_missing", kBlob2, 2, "is missing", true},
    {"41_blob_truncated", kBlob2, 2, "truncated", true},
    {"42_blob_wrong_dtype", kBlob2, 2, "is int64 [5], the definition wants int32 [5]", true},
    {"43_blob_wrong_shape", kBlob2, 2, "is int32 [4], the definition wants int32 [5]", true},
    {"44_blob_missing_key", kBlob2, 2, "has no tensor 'indptr'", true},
    {"45_blob_bad_header", kBlob2, 2, "not valid JSON", true},
    {"46_blob_size_mismatch", kBlob2, 2, "holds 16 bytes but int32 [5] needs 20", true},
    {"47_blob_overlapping_tensors", kBlob2, 2, "overlap", true},
    {"48_blob_path_dotdot", "workload.jsonl", 2, "inputs.indptr.path 'blobs/../../../valid/base/blobs/a3e7d5c1-9f2b-4c8e-b6a4-7e9d0c1b2a35.safetensors' leads outside the problem folder (a '..' step)"},
    {"49_blob_path_absolute", "workload.jsonl", 2, "inputs.indptr.path '/etc/passwd' leads outside the problem folder (an absolute path)"},
    {"50_blob_symlink_escape", "workload.jsonl", 2, "leads outside the problem folder (a symlink to "},
};

// Test names and failure messages show the folder, not the bytes of the struct.
void PrintTo(const Case& c, std::ostream* os) { *os << c.dir; }

size_t count_lines(const std::string& s) { return static_cast<size_t>(std::count(s.begin(), s.end(), '\n')); }

TEST(Malformed, EveryFolderHasAnExpectationAndViceVersa) {
  std::set<std::string> on_disk, listed;
  for (const auto& e : fs::directory_iterator(kMalformed))
    if (e.is_directory()) on_disk.insert(e.path().filename().string());
  for (const auto& c : kCases) listed.insert(c.dir);
  EXPECT_EQ(on_disk, listed);
  EXPECT_GE(on_disk.size(), 22u);
  for (const auto& d : on_disk) {
    EXPECT_TRUE(fs::exists(kMalformed / d / "definition.json")) << d;
    EXPECT_TRUE(fs::exists(kMalformed / d / "workload.jsonl")) << d;
  }
}

TEST(Malformed, ValidBaseLoads) {
  const std::string base = (fs::path(KA_TEST_DATA) / "valid" / "base").string();
  for (bool strict : {false, true}) {
    CliRun r = strict ? run_kernelarc({"problems", "--strict", base}) : run_kernelarc({"problems", base});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.err, "");
    EXPECT_NE(r.out.find("m_grouped_rmsnorm_h8"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("all available"), std::string::npos) << r.out;
  }
}

class MalformedFolder : public ::testing::TestWithParam<Case> {};

TEST_P(MalformedFolder, FailsWithOneLineNamingTheFault) {
  const Case& c = GetParam();
  const fs::path dir = kMalformed / c.dir;
  ASSERT_TRUE(fs::is_directory(dir)) << dir;
  std::string where = (dir / (c.blob ? "workload.jsonl" : c.file)).string();
  if (c.line) where += ":" + std::to_string(c.line);
  where += ":";
  auto check_error = [&](const CliRun& r) {
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_EQ(count_lines(r.err), 1u) << r.err;
    EXPECT_EQ(r.err.rfind("kernelarc: ", 0), 0u) << r.err;
    EXPECT_NE(r.err.find(where), std::string::npos) << "should name " << where << ": " << r.err;
    if (c.blob) {
      EXPECT_NE(r.err.find((dir / c.file).string()), std::string::npos) << "should name the blob: " << r.err;
    }
    EXPECT_NE(r.err.find(c.fragment), std::string::npos) << "should say '" << c.fragment << "': " << r.err;
    EXPECT_EQ(r.err.find("internal error"), std::string::npos) << r.err;
  };
  CliRun plain = run_kernelarc({"problems", dir.string()});
  if (c.blob) {
    // Reported, not fatal.
    EXPECT_EQ(plain.exit_code, 0) << plain.err;
    EXPECT_EQ(plain.err, "");
    EXPECT_NE(plain.out.find("MISSING"), std::string::npos) << plain.out;
    CliRun why = run_kernelarc({"problems", "--why", dir.string()});
    EXPECT_NE(why.out.find(c.fragment), std::string::npos) << why.out;
  } else {
    check_error(plain);
  }
  CliRun strict = run_kernelarc({"problems", "--strict", dir.string()});
  check_error(strict);
  if (!c.blob) {
    EXPECT_EQ(strict.err, plain.err);
  }
}

INSTANTIATE_TEST_SUITE_P(Data, MalformedFolder, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<Case>& i) { return std::string("m") + i.param.dir; });

TEST(Malformed, WholeFolderStopsAtTheFirstBadProblem) {
  // Listing the folder of all malformed problems fails on the first one (sorted), with one line.
  CliRun r = run_kernelarc({"problems", kMalformed.string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(count_lines(r.err), 1u) << r.err;
  EXPECT_NE(r.err.find("01_def_malformed_json"), std::string::npos) << r.err;
}

TEST(Malformed, DevSetLoadsStrict) {
  const fs::path dev = ka::source_root() / ".." / "shared" / "problems";
  if (!fs::exists(dev)) GTEST_SKIP() << dev << " is absent";
  CliRun r = run_kernelarc({"problems", "--strict", dev.string()});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_NE(r.out.find(" 0 with unavailable inputs"), std::string::npos) << r.out.substr(r.out.size() > 300 ? r.out.size() - 300 : 0);
}

TEST(Malformed, NoSuchPath) {
  CliRun r = run_kernelarc({"problems", (kMalformed / "no_such_problem").string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(count_lines(r.err), 1u) << r.err;
  EXPECT_NE(r.err.find("no_such_problem"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace ka
