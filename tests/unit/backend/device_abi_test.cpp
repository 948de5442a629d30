// The C ABI writer (backend/abi) with a device target it has never seen:
// everything it writes for a device target must come from the DeviceAbi
// (backend/abi/device_abi.h), so a made-up target's header and wrapper
// name only the made-up target's functions, and none of the CUDA backend's.
// Linked without backend/cuda, so it also shows that the writer does not
// depend on it. (The CUDA target's own text: scripts/dump_generated.sh
// and the emulator tests, on_stream_emu_test.cpp.)
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "backend/abi/c_abi.h"
#include "backend/abi/c_emit.h"
#include "tests/unit/backend/differential.h"
#include "tests/unit/test_paths.h"

namespace dccc::backend {
namespace {

using testing::Program;

std::string example(const std::string& name) {
  std::ifstream in(test_paths::examples_dir() + "/" + name);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// A device target that is not CUDA: every name and piece of text its own.
DeviceAbi fake_abi() {
  DeviceAbi d;
  d.name = "Fake";
  d.header_note = "/* FAKE NOTE */\nstruct fake_stream;\n\n";
  d.stream_param = "struct fake_stream* dcc_stream";
  d.wrapper_decls = "/* FAKE DECLS */\n#define DCC__DEVICE_KIND UINT64_C(7)\n";
  d.launcher = "__fakerun";
  d.launcher_params = "FAKE_PARAMS";
  d.stage = "dcc__fake_stage";
  d.is_device = "dcc__fake_is_device";
  d.device = "dcc__fake_device";
  d.copy_ctx = "dcc__fake_ctx";
  d.copy = "dcc__fake_copy";
  d.release = "dcc__fake_release";
  d.unit_on_device = [](const cabi::PreludeUnit&) { return true; };
  d.unit_kernel = "__fakeunit";
  d.function_names = {{"__blob", "the blob of "}};
  d.kernels = "__q";
  return d;
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

/// `text` compiled for a device target (the CUDA pass list: the IR is the
/// target's, the writer's input), its C names assigned for `abi`.
Program library(const std::string& name, const std::string& text, const DeviceAbi* abi) {
  Program p = testing::compile(name, text, /*cpu_passes=*/false, /*cuda_passes=*/true);
  if (p.module) {
    auto& funcs = p.module->funcs;
    funcs.erase(std::remove_if(funcs.begin(), funcs.end(), [](const ir::Func& f) { return f.name == "main"; }), funcs.end());
    assign_c_names(*p.module, abi);
  }
  return p;
}

TEST(DeviceAbi, TheWriterNamesOnlyWhatTheTargetGives) {
  const DeviceAbi abi = fake_abi();
  Program p = library("mha.toy", example("mha.toy"), &abi);
  ASSERT_TRUE(p.module);
  const std::string header = emit_header(*p.module, "mha.toy", "MHA_H", &abi);
  const std::string wrapper = emit_wrapper(*p.module, "mha.h", &abi);
  for (const std::string* text : {&header, &wrapper}) {
    EXPECT_EQ(lower(*text).find("cuda"), std::string::npos) << *text;
    EXPECT_EQ(text->find("CUstream"), std::string::npos) << *text;
  }
  EXPECT_NE(header.find("/* FAKE NOTE */"), std::string::npos) << header;
  EXPECT_NE(header.find("/* mha on a Fake stream, without waiting; length arrays on the host. */"), std::string::npos)
      << header;
  EXPECT_NE(header.find("mha_on_stream(const dcc_prelude* prelude, "), std::string::npos) << header;
  EXPECT_NE(header.find("struct fake_stream* dcc_stream) DCCRT_NOEXCEPT;"), std::string::npos) << header;
  EXPECT_NE(wrapper.find("/* FAKE DECLS */"), std::string::npos) << wrapper;
  EXPECT_NE(wrapper.find("int32_t mha__fakerun(FAKE_PARAMS);"), std::string::npos) << wrapper;
  EXPECT_NE(wrapper.find("mha__fakerun(sizes, buffers, host, "), std::string::npos) << wrapper;
  EXPECT_EQ(wrapper.find("__kernel("), std::string::npos) << wrapper;
  // Lengths staged to the host, refused as device memory by f_on_stream.
  EXPECT_NE(wrapper.find(" = dcc__fake_stage("), std::string::npos) << wrapper;
  EXPECT_NE(wrapper.find("dcc__fake_is_device("), std::string::npos) << wrapper;
  // The prelude units' device copies: the target's context, callbacks and
  // (unit_on_device says every unit) its unit kernels.
  EXPECT_NE(wrapper.find("w = dcc__fake_device();"), std::string::npos) << wrapper;
  EXPECT_NE(wrapper.find("struct dcc__fake_ctx uc = {pre, "), std::string::npos) << wrapper;
  EXPECT_NE(wrapper.find("dcc__fake_copy, dcc__fake_release, &uc, &dpre"), std::string::npos) << wrapper;
  EXPECT_NE(wrapper.find("__fakeunit(const struct dcc__prelude_ctx* pc"), std::string::npos) << wrapper;
  EXPECT_NE(wrapper.find("run == 3 ? NULL : dcc__prelude_"), std::string::npos) << wrapper;
}

TEST(DeviceAbi, UnitsTheTargetDoesNotComputeAreUploaded) {
  DeviceAbi abi = fake_abi();
  abi.unit_on_device = nullptr;
  Program p = library("mha.toy", example("mha.toy"), &abi);
  ASSERT_TRUE(p.module);
  const std::string wrapper = emit_wrapper(*p.module, "mha.h", &abi);
  EXPECT_EQ(wrapper.find("__fakeunit"), std::string::npos) << wrapper;
  EXPECT_NE(wrapper.find("struct dcc__fake_ctx uc = {pre, (size_t)elems * 8, &pc, pu_dl, NULL};"), std::string::npos)
      << wrapper;
}

TEST(DeviceAbi, TheCpuTargetHasNoDevicePart) {
  Program p = library("mha.toy", example("mha.toy"), nullptr);
  ASSERT_TRUE(p.module);
  const std::string header = emit_header(*p.module, "mha.toy", "MHA_H");
  const std::string wrapper = emit_wrapper(*p.module, "mha.h");
  EXPECT_EQ(header.find("_on_stream"), std::string::npos) << header;
  EXPECT_EQ(wrapper.find("_on_stream"), std::string::npos) << wrapper;
  EXPECT_EQ(wrapper.find("dpre"), std::string::npos) << wrapper;
  EXPECT_NE(wrapper.find("int32_t mha__kernel(const int64_t* sizes, void* const* buffers);"), std::string::npos) << wrapper;
}

/// The message assign_c_names throws for `text` with `abi`, or "".
std::string clash(const std::string& text, const DeviceAbi* abi) {
  try {
    Program p = library("clash.toy", text, abi);
    EXPECT_TRUE(p.module);
  } catch (const BackendUnsupported& e) {
    return e.what();
  }
  return "";
}

const char* const kCopy = "(x: [N]f32) -> [N]f32 {\n    let y: [N]f32;\n    y[i] = x[i];\n    return y;\n}\n";

TEST(DeviceAbi, TheTargetsOwnNamesAreClaimed) {
  const DeviceAbi abi = fake_abi();
  const std::string g = std::string("fn g") + kCopy;
  EXPECT_EQ(clash(g + "fn g__blob" + kCopy, &abi), "the C name `g__blob` for both the blob of `g` and the function `g__blob` (rename one)");
  EXPECT_EQ(clash(g + "fn g__q12" + kCopy, &abi), "the C name `g__q12` for both the function `g__q12` and a kernel of `g` (rename one)");
  EXPECT_EQ(clash(g + "fn g_on_stream" + kCopy, &abi),
            "the C name `g_on_stream` for both the stream function of `g` and the function `g_on_stream` (rename one)");
  EXPECT_EQ(clash(g + "fn g__fakerun" + kCopy, &abi),
            "the C name `g__fakerun` for both the kernel of `g` and the function `g__fakerun` (rename one)");
  // On the CPU none of them is taken, and the kernel is g__kernel.
  EXPECT_EQ(clash(g + "fn g__blob" + kCopy + "fn g__q12" + kCopy + "fn g_on_stream" + kCopy, nullptr), "");
  EXPECT_EQ(clash(g + "fn g__kernel" + kCopy, nullptr),
            "the C name `g__kernel` for both the kernel of `g` and the function `g__kernel` (rename one)");
}

}  // namespace
}  // namespace dccc::backend
