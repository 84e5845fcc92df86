//===- Npy.cpp - NumPy .npy reading and writing --------------------------===//
#include "kiln/runtime/Npy.h"

#include <cstring>
#include <fstream>
#include <regex>
#include <sstream>

namespace kiln {
namespace {

struct NpyType {
  const char *descr;
  DType dtype;
};
constexpr NpyType kNpyTypes[] = {
    {"f8", DType::F64}, {"f4", DType::F32}, {"f2", DType::F16},
    {"i1", DType::I8},  {"i2", DType::I16}, {"i4", DType::I32},
    {"i8", DType::I64}, {"u1", DType::U8},  {"u2", DType::U16},
    {"u4", DType::U32}, {"u8", DType::U64}, {"b1", DType::Bool},
};

std::unexpected<Error> bad(const std::string &path, const std::string &why) {
  return makeError(ErrorKind::InvalidArgument, path + ": " + why);
}

/// Row-major copy of a column-major (Fortran-order) buffer.
using Bytes = decltype(HostTensor::data);

Bytes fortranToC(const Bytes &src,
                                  const std::vector<int64_t> &shape,
                                  size_t elemSize) {
  Bytes dst(src.size());
  int64_t n = static_cast<int64_t>(src.size() / elemSize);
  std::vector<int64_t> index(shape.size(), 0);
  for (int64_t c = 0; c < n; ++c) {
    // `index` is the multi-index of row-major position c.
    int64_t f = 0, stride = 1;
    for (size_t d = 0; d < shape.size(); ++d) {
      f += index[d] * stride;
      stride *= shape[d];
    }
    std::memcpy(&dst[c * elemSize], &src[f * elemSize], elemSize);
    for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
      if (++index[d] < shape[d])
        break;
      index[d] = 0;
    }
  }
  return dst;
}
} // namespace

Expected<HostTensor> readNpy(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return bad(path, "cannot open file");
  std::string bytes((std::istreambuf_iterator<char>(in)),
                    std::istreambuf_iterator<char>());
  return parseNpy(bytes, path);
}

Expected<HostTensor> parseNpy(std::string_view bytes, const std::string &path) {
  if (bytes.size() < 10 || bytes.compare(0, 6, "\x93NUMPY") != 0)
    return bad(path, "not a .npy file (bad magic)");
  int major = static_cast<unsigned char>(bytes[6]);
  size_t headerLen, headerStart;
  if (major == 1) {
    headerLen = static_cast<unsigned char>(bytes[8]) |
                static_cast<unsigned char>(bytes[9]) << 8;
    headerStart = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12)
      return bad(path, "truncated header");
    headerLen = 0;
    for (int i = 3; i >= 0; --i)
      headerLen = headerLen << 8 | static_cast<unsigned char>(bytes[8 + i]);
    headerStart = 12;
  } else {
    return bad(path, "unsupported .npy format version " + std::to_string(major));
  }
  if (headerStart + headerLen > bytes.size())
    return bad(path, "truncated header");
  std::string header(bytes.substr(headerStart, headerLen));

  std::smatch m;
  if (!std::regex_search(header, m,
                         std::regex(R"('descr'\s*:\s*'([<>|=])([a-zA-Z]\d+)')")))
    return bad(path, "header has no 'descr'");
  std::string order = m[1], code = m[2];
  const NpyType *type = nullptr;
  for (const NpyType &t : kNpyTypes)
    if (code == t.descr)
      type = &t;
  if (!type)
    return bad(path, "unsupported dtype '" + order + code + "'");
  if (order == ">" && code.substr(1) != "1")
    return bad(path, "big-endian data is not supported");
  if (!std::regex_search(header, m,
                         std::regex(R"('fortran_order'\s*:\s*(True|False))")))
    return bad(path, "header has no 'fortran_order'");
  bool fortran = m[1] == "True";
  if (!std::regex_search(header, m, std::regex(R"('shape'\s*:\s*\(([^)]*)\))")))
    return bad(path, "header has no 'shape'");
  std::vector<int64_t> shape;
  std::string dims = m[1];
  std::regex number(R"(\d+)");
  for (auto it = std::sregex_iterator(dims.begin(), dims.end(), number);
       it != std::sregex_iterator(); ++it) {
    try {
      shape.push_back(std::stoll(it->str()));
    } catch (const std::exception &) {
      return bad(path, "shape entry out of range");
    }
  }

  HostTensor tensor;
  tensor.dtype = type->dtype;
  tensor.shape = shape;
  int64_t count = tensor.numElements();
  size_t want = static_cast<size_t>(count) * dtypeSize(type->dtype);
  size_t dataStart = headerStart + headerLen;
  if (count < 0 || bytes.size() - dataStart < want)
    return bad(path, "truncated data: expected " + std::to_string(want) +
                         " bytes for shape " + shapeToString(shape) + ", found " +
                         std::to_string(bytes.size() - dataStart));
  tensor.data.resize(want);
  std::memcpy(tensor.data.data(), bytes.data() + dataStart, want);
  if (fortran && shape.size() > 1)
    tensor.data = fortranToC(tensor.data, shape, dtypeSize(type->dtype));
  return tensor;
}

Expected<void> writeNpy(const std::string &path, const HostTensor &tensor) {
  const NpyType *type = nullptr;
  for (const NpyType &t : kNpyTypes)
    if (t.dtype == tensor.dtype)
      type = &t;
  if (!type)
    return makeError(ErrorKind::Unsupported,
                     path + ": NumPy has no type for " +
                         std::string(dtypeName(tensor.dtype)));
  std::ostringstream dict;
  char order = dtypeSize(tensor.dtype) == 1 ? '|' : '<';
  dict << "{'descr': '" << order << type->descr
       << "', 'fortran_order': False, 'shape': (";
  for (int64_t d : tensor.shape)
    dict << d << (tensor.shape.size() == 1 ? ",)" : ", ");
  std::string header = dict.str();
  if (tensor.shape.size() != 1) {
    if (!tensor.shape.empty())
      header.resize(header.size() - 2);
    header += ")";
  }
  header += ", }";
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::ofstream out(path, std::ios::binary);
  if (!out)
    return makeError(ErrorKind::InvalidArgument, path + ": cannot write file");
  out.write("\x93NUMPY\x01\x00", 8);
  uint16_t len = static_cast<uint16_t>(header.size());
  out.put(static_cast<char>(len & 0xff)).put(static_cast<char>(len >> 8));
  out << header;
  out.write(reinterpret_cast<const char *>(tensor.data.data()),
            static_cast<std::streamsize>(tensor.data.size()));
  if (!out)
    return makeError(ErrorKind::InvalidArgument, path + ": write failed");
  return {};
}

} // namespace kiln
