#pragma once
// Element types and reduction operators, named as nccl-tests names them on its command line and
// in its table, with the reduction kernels every host-side backend uses.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

namespace collkit::exec {

enum class DataType : std::uint8_t { Float32, Float16, BFloat16, Float64, Int32, Int8, UInt8 };
enum class RedOp : std::uint8_t { Sum, Prod, Min, Max, Avg };

inline constexpr DataType kDataTypes[] = {DataType::Float32, DataType::Float16, DataType::BFloat16, DataType::Float64,
                                          DataType::Int32,   DataType::Int8,    DataType::UInt8};
inline constexpr RedOp kRedOps[] = {RedOp::Sum, RedOp::Prod, RedOp::Min, RedOp::Max, RedOp::Avg};

/// Bytes per element.
std::size_t size_of(DataType t);
/// nccl-tests' column name: "float", "half", "bfloat16", "double", "int32", "int8", "uint8".
std::string_view to_string(DataType t);
std::string_view to_string(RedOp op);
/// Accepts the names above and "float32", "float16", "fp16", "bf16", "float64", "int", "char".
std::optional<DataType> parse_datatype(std::string_view text);
std::optional<RedOp> parse_redop(std::string_view text);
/// Parses a comma-separated list, "all" meaning every value; throws InputError naming the
/// unknown entry and listing the accepted ones.
std::vector<DataType> parse_datatypes(std::string_view text);
std::vector<RedOp> parse_redops(std::string_view text);

bool is_float(DataType t);
/// The largest integer n such that every integer in [-n, n] is exact in `t` (floats: 2^mantissa).
double exact_integer_limit(DataType t);

/// `value` converted to `t` and stored at element `index` of `buffer` (integers wrap two's complement).
void store(DataType t, void* buffer, std::size_t index, double value);
/// Element `index` of `buffer` as a double.
double load(DataType t, const void* buffer, std::size_t index);

/// dst[i] = a[i] (op) b[i] for n elements; dst may alias a or b. Avg reduces as Sum: the mean is
/// taken once at the end with scale_mean(). Half and bfloat16 compute in float and round to
/// nearest even, as the GPU's conversion does.
void reduce(DataType t, RedOp op, void* dst, const void* a, const void* b, std::size_t n);
/// x[i] /= nranks, the last step of Avg (integers divide as integers, as NCCL does).
void scale_mean(DataType t, void* x, std::size_t n, int nranks);

}  // namespace collkit::exec
