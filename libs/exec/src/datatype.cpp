#include "collkit/exec/datatype.h"

#include <array>
#include <cmath>
#include <cstring>
#include <string>

#include "collkit/core/error.h"
#include "half.h"

namespace collkit::exec {

namespace {

struct TypeFacts {
  DataType type;
  std::string_view name;  // nccl-tests' column name
  std::size_t bytes;
  double exact_limit;     // 2^(mantissa bits + 1) for floats
  std::array<std::string_view, 4> aliases;
};

constexpr TypeFacts kTypes[] = {
    {DataType::Float32, "float", 4, 16777216.0, {"float32", "fp32", "f32", ""}},
    {DataType::Float16, "half", 2, 2048.0, {"float16", "fp16", "f16", ""}},
    {DataType::BFloat16, "bfloat16", 2, 256.0, {"bf16", "", "", ""}},
    {DataType::Float64, "double", 8, 9007199254740992.0, {"float64", "fp64", "f64", ""}},
    {DataType::Int32, "int32", 4, 2147483647.0, {"int", "i32", "", ""}},
    {DataType::Int8, "int8", 1, 127.0, {"char", "i8", "", ""}},
    {DataType::UInt8, "uint8", 1, 255.0, {"u8", "", "", ""}},
};

const TypeFacts& facts(DataType t) { return kTypes[static_cast<std::size_t>(t)]; }

constexpr std::string_view kOpNames[] = {"sum", "prod", "min", "max", "avg"};

template <class T, class Parse>
std::vector<T> parse_list(std::string_view text, Parse parse, std::span<const T> all, std::string_view what,
                          std::string_view accepted) {
  if (text == "all") return {all.begin(), all.end()};
  std::vector<T> out;
  std::size_t at = 0;
  while (at <= text.size()) {
    std::size_t comma = text.find(',', at);
    std::string_view item = text.substr(at, comma == std::string_view::npos ? std::string_view::npos : comma - at);
    auto v = parse(item);
    if (!v)
      throw InputError("unknown " + std::string(what) + " \"" + std::string(item) + "\" (expected " + std::string(accepted) +
                       " or all)");
    out.push_back(*v);
    if (comma == std::string_view::npos) break;
    at = comma + 1;
  }
  return out;
}

}  // namespace

std::size_t size_of(DataType t) { return facts(t).bytes; }
std::string_view to_string(DataType t) { return facts(t).name; }
std::string_view to_string(RedOp op) { return kOpNames[static_cast<std::size_t>(op)]; }
bool is_float(DataType t) { return t == DataType::Float32 || t == DataType::Float16 || t == DataType::BFloat16 || t == DataType::Float64; }
double exact_integer_limit(DataType t) { return facts(t).exact_limit; }

std::optional<DataType> parse_datatype(std::string_view text) {
  for (const TypeFacts& f : kTypes) {
    if (text == f.name) return f.type;
    for (std::string_view a : f.aliases)
      if (!a.empty() && text == a) return f.type;
  }
  return std::nullopt;
}

std::optional<RedOp> parse_redop(std::string_view text) {
  for (RedOp op : kRedOps)
    if (text == to_string(op)) return op;
  return std::nullopt;
}

std::vector<DataType> parse_datatypes(std::string_view text) {
  return parse_list<DataType>(text, parse_datatype, kDataTypes, "datatype",
                              "float32, float16, bfloat16, float64, int32, int8, uint8");
}

std::vector<RedOp> parse_redops(std::string_view text) {
  return parse_list<RedOp>(text, parse_redop, kRedOps, "reduction op", "sum, prod, min, max, avg");
}

void store(DataType t, void* buffer, std::size_t index, double value) {
  auto* b = static_cast<unsigned char*>(buffer);
  switch (t) {
    case DataType::Float32: {
      auto v = static_cast<float>(value);
      std::memcpy(b + 4 * index, &v, 4);
      return;
    }
    case DataType::Float16: {
      std::uint16_t v = half::from_float(static_cast<float>(value));
      std::memcpy(b + 2 * index, &v, 2);
      return;
    }
    case DataType::BFloat16: {
      std::uint16_t v = half::bf16_from_float(static_cast<float>(value));
      std::memcpy(b + 2 * index, &v, 2);
      return;
    }
    case DataType::Float64: std::memcpy(b + 8 * index, &value, 8); return;
    case DataType::Int32: {
      // Through int64 and unsigned arithmetic: conversion wraps modulo 2^32 (C++20 defines it).
      auto v = static_cast<std::int32_t>(static_cast<std::int64_t>(value));
      std::memcpy(b + 4 * index, &v, 4);
      return;
    }
    case DataType::Int8: b[index] = static_cast<unsigned char>(static_cast<std::int8_t>(static_cast<std::int64_t>(value))); return;
    case DataType::UInt8: b[index] = static_cast<std::uint8_t>(static_cast<std::int64_t>(value)); return;
  }
}

double load(DataType t, const void* buffer, std::size_t index) {
  const auto* b = static_cast<const unsigned char*>(buffer);
  switch (t) {
    case DataType::Float32: {
      float v;
      std::memcpy(&v, b + 4 * index, 4);
      return v;
    }
    case DataType::Float16: {
      std::uint16_t v;
      std::memcpy(&v, b + 2 * index, 2);
      return half::to_float(v);
    }
    case DataType::BFloat16: {
      std::uint16_t v;
      std::memcpy(&v, b + 2 * index, 2);
      return half::bf16_to_float(v);
    }
    case DataType::Float64: {
      double v;
      std::memcpy(&v, b + 8 * index, 8);
      return v;
    }
    case DataType::Int32: {
      std::int32_t v;
      std::memcpy(&v, b + 4 * index, 4);
      return v;
    }
    case DataType::Int8: return static_cast<std::int8_t>(b[index]);
    case DataType::UInt8: return b[index];
  }
  return 0;
}

}  // namespace collkit::exec
