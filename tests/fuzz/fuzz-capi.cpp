//===- fuzz-capi.cpp - libFuzzer target: C API call sequences -------------===//
//
// The input is a little program of kiln.h calls: create, write, read,
// apply, run, capture, replay and destroy, on two CPU backends and (where
// there is one, lavapipe in CI) two backends of vulkan:0, with tensors
// freely passed to a backend that did not make them. Every call must
// return OK or an error with a message (never KILN_INTERNAL, a crash or a
// sanitizer report), and a tensor read back must hold what was last
// written into it.
//
//===----------------------------------------------------------------------===//
#include "kiln/kiln.h"

#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

/// Reads the fuzz input; past its end every read is zero.
class Input {
public:
  Input(const uint8_t *data, size_t size) : data(data), size(size) {}
  bool empty() const { return pos >= size; }
  uint8_t byte() { return pos < size ? data[pos++] : 0; }
  size_t pick(size_t n) { return byte() % n; }
  std::string text(size_t maxLength) {
    size_t n = std::min(pick(maxLength + 1), size - std::min(pos, size));
    std::string s(reinterpret_cast<const char *>(data + pos), n);
    pos += n;
    return s;
  }
  void fill(std::vector<uint8_t> &bytes) {
    for (uint8_t &b : bytes)
      b = byte();
  }

private:
  const uint8_t *data;
  size_t size, pos = 0;
};

struct DTypeInfo {
  kiln_dtype dtype;
  size_t size;
};
constexpr DTypeInfo kDTypes[] = {{KILN_F32, 4}, {KILN_I32, 4}, {KILN_F16, 2},
                                 {KILN_I64, 8}, {KILN_U8, 1},  {KILN_BOOL, 1},
                                 {KILN_F64, 8}, {KILN_BF16, 2}, {KILN_F8E4M3FN, 1}};

struct Slot {
  kiln_tensor *tensor = nullptr;
  kiln_dtype dtype = KILN_F32;
  std::vector<int64_t> shape;
  size_t bytes = 0;
  /// What the tensor holds when the fuzzer knows it (made or written from
  /// the host); empty for op results.
  std::vector<uint8_t> known;
};

size_t elementSize(kiln_dtype dtype) {
  for (const DTypeInfo &t : kDTypes)
    if (t.dtype == dtype)
      return t.size;
  return 4;
}

void check(kiln_status status, const char *call) {
  if (status.code == KILN_OK)
    return;
  if (status.code == KILN_INTERNAL || !status.message || !*status.message) {
    std::fprintf(stderr, "%s: code %d, message '%s'\n", call, status.code,
                 status.message ? status.message : "(null)");
    std::abort();
  }
}

const char *kUnary[] = {"kiln.neg", "kiln.abs",  "kiln.exp",   "kiln.relu",
                        "kiln.not", "kiln.sign", "kiln.floor", "kiln.sqrt"};
const char *kBinary[] = {"kiln.add", "kiln.sub", "kiln.mul", "kiln.div",
                         "kiln.max", "kiln.eq",  "kiln.and", "kiln.matmul"};
const char *kDimOps[] = {"kiln.reduce_sum", "kiln.reduce_max", "kiln.softmax",
                         "kiln.cumsum",     "kiln.argmax",     "kiln.flip"};
const char *kPrograms[] = {
    "func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {\n"
    "  %y = kiln.exp %x : tensor<4xf32>\n  return %y : tensor<4xf32>\n}\n",
    "func.func @main(%x: tensor<2x3xf32>, %y: tensor<3xf32>) -> tensor<2x3xf32> {\n"
    "  %z = kiln.add %x, %y : tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xf32>\n"
    "  return %z : tensor<2x3xf32>\n}\n",
    "func.func @main(%s: tensor<i64>) -> tensor<3x5xf32> {\n"
    "  %r = kiln.random_normal %s {mean = 0.0 : f64, std = 1.0 : f64} : tensor<i64> -> tensor<3x5xf32>\n"
    "  return %r : tensor<3x5xf32>\n}\n",
};

class Session {
public:
  explicit Session(Input &in) : in(in) {}
  ~Session() {
    for (kiln_backend *b : backends())
      if (b) {
        kiln_graph *g = nullptr;
        kiln_graph_stop_capture(b, &g); // an open capture ends with the input
        kiln_graph_destroy(g);
        kiln_memory_persistent_allocations(b, 0);
      }
    for (kiln_graph *&g : graphs)
      kiln_graph_destroy(g);
    for (Slot &s : slots)
      kiln_tensor_destroy(s.tensor);
    for (kiln_backend *b : backends())
      if (b) {
        kiln_sync(b);
        kiln_memory_cleanup(b);
      }
  }

  void step() {
    kiln_backend *b = backend();
    switch (in.pick(12)) {
    case 0: create(b); break;
    case 1: write(b); break;
    case 2: read(b); break;
    case 3: unary(b); break;
    case 4: binary(b); break;
    case 5: dimOp(b); break;
    case 6: runProgram(b); break;
    case 7: applyText(b); break;
    case 8: graphCall(b); break;
    case 9: destroy(); break;
    case 10: memoryCall(b); break;
    default: check(kiln_seed(b, in.byte()), "kiln_seed"); break;
    }
  }

private:
  static std::array<kiln_backend *, 4> &backends() {
    // Two backends per device: tensors must not be mixed up between them.
    static std::array<kiln_backend *, 4> all = [] {
      std::array<kiln_backend *, 4> b{};
      const char *devices[] = {"cpu", "cpu", "vulkan:0", "vulkan:0"};
      int vulkan = 0;
      kiln_device_count("vulkan", &vulkan);
      for (int i = 0; i < 4; ++i)
        if (i < 2 || vulkan > 0)
          check(kiln_backend_create(devices[i], &b[i]), "kiln_backend_create");
      return b;
    }();
    return all;
  }
  kiln_backend *backend() {
    kiln_backend *b = backends()[in.pick(4)];
    return b ? b : backends()[0];
  }
  Slot &slot() { return slots[in.pick(slots.size())]; }

  /// Puts a new tensor (or nothing, after an error) into `s`.
  void replace(Slot &s, kiln_tensor *t, kiln_dtype dtype, std::vector<int64_t> shape) {
    kiln_tensor_destroy(s.tensor);
    s = Slot{};
    if (!t)
      return;
    s.tensor = t;
    s.dtype = dtype;
    s.shape = std::move(shape);
    s.bytes = elementSize(dtype);
    for (int64_t d : s.shape)
      s.bytes *= d;
  }
  /// The right byte count, or now and then a wrong one.
  size_t bytesFor(size_t right) {
    switch (in.pick(8)) {
    case 0: return right + 1;
    case 1: return right / 2;
    default: return right;
    }
  }

  void create(kiln_backend *b) {
    DTypeInfo type = kDTypes[in.pick(std::size(kDTypes))];
    std::vector<int64_t> shape(in.pick(4));
    size_t count = 1;
    for (int64_t &d : shape)
      count *= d = in.pick(6);
    std::vector<uint8_t> data(bytesFor(count * type.size));
    in.fill(data);
    kiln_tensor *t = nullptr;
    kiln_status s = kiln_tensor_from_host(b, type.dtype, shape.data(), shape.size(),
                                          data.data(), data.size(), &t);
    check(s, "kiln_tensor_from_host");
    Slot &dst = slot();
    replace(dst, s.code == KILN_OK ? t : nullptr, type.dtype, shape);
    if (dst.tensor)
      dst.known = std::move(data);
  }
  void write(kiln_backend *b) {
    Slot &s = slot();
    if (!s.tensor)
      return;
    std::vector<uint8_t> data(bytesFor(s.bytes));
    in.fill(data);
    kiln_status status = kiln_tensor_write(b, s.tensor, data.data(), data.size());
    check(status, "kiln_tensor_write");
    if (status.code == KILN_OK)
      s.known = std::move(data);
  }
  void read(kiln_backend *b) {
    Slot &s = slot();
    if (!s.tensor)
      return;
    std::vector<uint8_t> data(bytesFor(s.bytes));
    kiln_status status = kiln_tensor_to_host(b, s.tensor, data.data(), data.size());
    check(status, "kiln_tensor_to_host");
    if (status.code == KILN_OK && !s.known.empty() && data != s.known) {
      std::fprintf(stderr, "kiln_tensor_to_host returned other data than was written\n");
      std::abort();
    }
  }
  /// Applies `op` to `inputs` (slots), its result typed like the first
  /// input or, now and then, with another element type or rank.
  void apply(kiln_backend *b, const char *op, std::vector<Slot *> inputs,
             const std::string &attrs) {
    std::vector<kiln_tensor *> tensors;
    for (Slot *s : inputs) {
      if (!s->tensor)
        return;
      tensors.push_back(s->tensor);
    }
    kiln_dtype dtype = inputs[0]->dtype;
    std::vector<int64_t> shape = inputs[0]->shape;
    if (in.pick(4) == 0)
      dtype = kDTypes[in.pick(std::size(kDTypes))].dtype;
    if (in.pick(4) == 0 && !shape.empty())
      shape.pop_back();
    kiln_tensor *t = nullptr;
    kiln_status s = kiln_apply(b, op, tensors.data(), tensors.size(), dtype, shape.data(),
                               shape.size(), attrs.empty() ? nullptr : attrs.c_str(), &t);
    check(s, op);
    if (s.code == KILN_OK)
      replace(slot(), t, dtype, shape);
  }
  void unary(kiln_backend *b) {
    const char *op = kUnary[in.pick(std::size(kUnary))];
    apply(b, op, {&slot()}, "");
  }
  void binary(kiln_backend *b) {
    const char *op = kBinary[in.pick(std::size(kBinary))];
    Slot *lhs = &slot(), *rhs = &slot();
    apply(b, op, {lhs, rhs}, "");
  }
  void dimOp(kiln_backend *b) {
    size_t which = in.pick(std::size(kDimOps));
    int dim = in.pick(4);
    // reduce_* take `dims`, flip takes `dims` too, the others one `dim`.
    std::string attrs = which < 2 || which == 5
                            ? "dims = array<i64: " + std::to_string(dim) + ">"
                            : "dim = " + std::to_string(dim) + " : i64";
    apply(b, kDimOps[which], {&slot()}, attrs);
  }
  /// An op name and attributes straight from the input: they end up in the
  /// program text apply() builds.
  void applyText(kiln_backend *b) {
    std::string op = "kiln." + in.text(16);
    std::string attrs = in.text(32);
    apply(b, op.c_str(), {&slot()}, attrs);
  }
  void runProgram(kiln_backend *b) {
    const char *program = kPrograms[in.pick(std::size(kPrograms))];
    std::vector<kiln_tensor *> inputs;
    for (size_t i = in.pick(3); i > 0; --i)
      inputs.push_back(slot().tensor);
    std::array<kiln_tensor *, 2> outputs{};
    size_t count = 0;
    kiln_status s = kiln_run(b, program, inputs.data(), inputs.size(), outputs.data(),
                             in.pick(3), &count);
    check(s, "kiln_run");
    if (s.code == KILN_OK)
      for (size_t i = 0; i < count && i < outputs.size(); ++i) {
        kiln_dtype dtype;
        size_t rank = 0;
        std::array<int64_t, 8> shape{};
        check(kiln_tensor_info(outputs[i], &dtype, &rank, shape.data(), shape.size()),
              "kiln_tensor_info");
        replace(slot(), outputs[i], dtype, {shape.begin(), shape.begin() + rank});
      }
  }
  void graphCall(kiln_backend *b) {
    kiln_graph *&g = graphs[in.pick(graphs.size())];
    switch (in.pick(5)) {
    case 0: check(kiln_graph_prepare(b), "kiln_graph_prepare"); break;
    case 1: check(kiln_graph_start_capture(b), "kiln_graph_start_capture"); break;
    case 2: {
      kiln_graph *made = nullptr;
      kiln_status s = kiln_graph_stop_capture(b, &made);
      check(s, "kiln_graph_stop_capture");
      if (s.code == KILN_OK) {
        kiln_graph_destroy(g);
        g = made;
      }
      break;
    }
    case 3:
      if (!g)
        break;
      check(kiln_graph_replay(b, g), "kiln_graph_replay");
      // A replay rewrites its captured results, wherever they are now.
      for (Slot &s : slots)
        s.known.clear();
      break;
    default: kiln_graph_destroy(g); g = nullptr; break;
    }
  }
  void destroy() { replace(slot(), nullptr, KILN_F32, {}); }
  void memoryCall(kiln_backend *b) {
    switch (in.pick(4)) {
    case 0: check(kiln_sync(b), "kiln_sync"); break;
    case 1: check(kiln_flush(b), "kiln_flush"); break;
    case 2: check(kiln_memory_cleanup(b), "kiln_memory_cleanup"); break;
    default:
      check(kiln_memory_persistent_allocations(b, in.pick(2)),
            "kiln_memory_persistent_allocations");
      break;
    }
  }

  Input &in;
  std::array<Slot, 6> slots;
  std::array<kiln_graph *, 2> graphs{};
};

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  Input in(data, size);
  Session session(in);
  for (int steps = 0; steps < 64 && !in.empty(); ++steps)
    session.step();
  return 0;
}
