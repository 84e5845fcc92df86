//===- programs.h - kiln programs the benchmarks time -----------*- C++ -*-===//
#ifndef KILN_BENCH_PROGRAMS_H
#define KILN_BENCH_PROGRAMS_H

#include <string>

namespace kiln::bench {

inline std::string tensor(const std::string &shape, const char *elem = "f32") {
  return "tensor<" + shape + "x" + elem + ">";
}

/// a + b on `n` f32 elements.
inline std::string addProgram(const std::string &n) {
  std::string v = tensor(n);
  return "func.func @main(%a: " + v + ", %b: " + v + ") -> " + v +
         " {\n %0 = kiln.add %a, %b : (" + v + ", " + v + ") -> " + v +
         "\n return %0 : " + v + "\n}";
}

/// Sum over the last dim of a rows x cols f32 matrix.
inline std::string reduceSumRowsProgram(int rows, int cols) {
  std::string x = tensor(std::to_string(rows) + "x" + std::to_string(cols));
  std::string r = tensor(std::to_string(rows));
  return "func.func @main(%x: " + x + ") -> " + r +
         " {\n %0 = kiln.reduce_sum %x {dims = array<i64: 1>} : " + x + " -> " + r +
         "\n return %0 : " + r + "\n}";
}

/// Softmax over the last dim of a rows x cols f32 matrix.
inline std::string softmaxRowsProgram(int rows, int cols) {
  std::string x = tensor(std::to_string(rows) + "x" + std::to_string(cols));
  return "func.func @main(%x: " + x + ") -> " + x + " {\n %0 = kiln.softmax %x " +
         "{dim = 1} : " + x + "\n return %0 : " + x + "\n}";
}

/// An n x n x n matmul of `elem` inputs with f32 results.
inline std::string squareMatmulProgram(int n, const char *elem) {
  std::string side = std::to_string(n) + "x" + std::to_string(n);
  std::string in = tensor(side, elem), out = tensor(side);
  return "func.func @main(%a: " + in + ", %b: " + in + ") -> " + out +
         " {\n %0 = kiln.matmul %a, %b : (" + in + ", " + in + ") -> " + out +
         "\n return %0 : " + out + "\n}";
}

} // namespace kiln::bench

#endif
