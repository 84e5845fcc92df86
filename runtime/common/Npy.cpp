//===- Npy.cpp - NumPy .npy reading and writing --------------------------===//
#include "kiln/runtime/common/Npy.h"
#include "kiln/runtime/common/CopyBytes.h"

#include <cctype>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <fstream>
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

std::string_view trim(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front())))
    text.remove_prefix(1);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back())))
    text.remove_suffix(1);
  return text;
}

/// The text after `'key':` in the header's dict literal. Hand-parsed in one
/// pass: std::regex recurses per character and overflowed the stack on
/// long headers.
std::optional<std::string_view> valueOf(std::string_view header,
                                        std::string_view key) {
  std::string quoted = "'" + std::string(key) + "'";
  size_t at = header.find(quoted);
  if (at == std::string_view::npos)
    return std::nullopt;
  std::string_view rest = trim(header.substr(at + quoted.size()));
  if (!rest.starts_with(":"))
    return std::nullopt;
  return trim(rest.substr(1));
}

/// The contents of the '...' string that `text` starts with.
std::optional<std::string_view> quotedString(std::optional<std::string_view> text) {
  if (!text || !text->starts_with("'"))
    return std::nullopt;
  size_t end = text->find('\'', 1);
  if (end == std::string_view::npos)
    return std::nullopt;
  return text->substr(1, end - 1);
}

} // namespace

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

  std::optional<std::string_view> descr = quotedString(valueOf(header, "descr"));
  if (!descr || descr->size() < 2 || !std::string_view("<>|=").contains(descr->front()))
    return bad(path, "header has no 'descr'");
  char order = descr->front();
  std::string_view code = descr->substr(1);
  const NpyType *type = nullptr;
  for (const NpyType &t : kNpyTypes)
    if (code == t.descr)
      type = &t;
  if (!type)
    return bad(path, "unsupported dtype '" + std::string(*descr) + "'");
  if (order == '>' && code.substr(1) != "1")
    return bad(path, "big-endian data is not supported");
  std::optional<std::string_view> fortranOrder = valueOf(header, "fortran_order");
  if (!fortranOrder ||
      !(fortranOrder->starts_with("True") || fortranOrder->starts_with("False")))
    return bad(path, "header has no 'fortran_order'");
  bool fortran = fortranOrder->starts_with("True");
  std::optional<std::string_view> shapeText = valueOf(header, "shape");
  size_t close = shapeText ? shapeText->find(')') : std::string_view::npos;
  if (!shapeText || !shapeText->starts_with("(") || close == std::string_view::npos)
    return bad(path, "header has no 'shape'");
  std::vector<int64_t> shape;
  std::string_view dims = shapeText->substr(1, close - 1);
  while (!dims.empty()) {
    size_t comma = std::min(dims.find(','), dims.size());
    std::string_view text = trim(dims.substr(0, comma));
    dims.remove_prefix(std::min(comma + 1, dims.size()));
    if (text.empty() && dims.empty()) // the trailing comma of "(5,)"
      break;
    int64_t size = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), size);
    if (text.empty() || end != text.data() + text.size() || text.front() == '-' ||
        (ec != std::errc() && ec != std::errc::result_out_of_range))
      return bad(path, "shape entry '" + std::string(text) + "' is not a size");
    if (ec == std::errc::result_out_of_range)
      return bad(path, "shape entry " + std::string(text) + " is out of range");
    shape.push_back(size);
  }
  auto want = tensorBytes(type->dtype, shape);
  if (!want)
    return bad(path, want.error().message);

  HostTensor tensor;
  tensor.dtype = type->dtype;
  tensor.shape = shape;
  size_t dataStart = headerStart + headerLen;
  if (bytes.size() - dataStart < static_cast<uint64_t>(*want))
    return bad(path, "truncated data: expected " + std::to_string(*want) +
                         " bytes for shape " + shapeToString(shape) + ", found " +
                         std::to_string(bytes.size() - dataStart));
  tensor.data.resize(*want);
  copyBytes(tensor.data.data(), bytes.data() + dataStart, *want);
  if (fortran && shape.size() > 1)
    tensor.data = fortranToC(tensor.data, shape, dtypeSize(type->dtype));
  return tensor;
}

Expected<HostTensor> readNpy(const std::string &path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    return bad(path, "is a directory, not a .npy file");
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return bad(path, "cannot open file");
  try {
    std::string bytes((std::istreambuf_iterator<char>(in)),
                      std::istreambuf_iterator<char>());
    if (in.bad())
      return bad(path, "cannot read file");
    return parseNpy(bytes, path);
  } catch (const std::bad_alloc &) {
    return makeError(ErrorKind::OutOfMemory,
                     path + ": the file does not fit in host memory");
  }
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
