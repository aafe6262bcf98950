#include <doctest/doctest.h>

#include <cstring>
#include <vector>

#include "collkit/core/error.h"
#include "collkit/exec/datatype.h"
#include "half.h"

using namespace collkit::exec;

TEST_CASE("half and bfloat16 round to nearest even, and hold small integers exactly") {
  for (int i = -2048; i <= 2048; ++i) CHECK(half::to_float(half::from_float(static_cast<float>(i))) == static_cast<float>(i));
  CHECK(half::to_float(half::from_float(2049.0f)) == 2048.0f);  // tie: to the even mantissa
  CHECK(half::to_float(half::from_float(2051.0f)) == 2052.0f);
  CHECK(half::to_float(half::from_float(65504.0f)) == 65504.0f);
  CHECK(half::from_float(1e6f) == 0x7c00u);  // overflow: infinity
  CHECK(half::to_float(half::from_float(5.9604645e-8f)) == 5.9604645e-8f);  // the smallest subnormal
  for (int i = -256; i <= 256; ++i)
    CHECK(half::bf16_to_float(half::bf16_from_float(static_cast<float>(i))) == static_cast<float>(i));
  CHECK(half::bf16_to_float(half::bf16_from_float(257.0f)) == 256.0f);
  CHECK(half::bf16_to_float(half::bf16_from_float(259.0f)) == 260.0f);
}

TEST_CASE("datatype and operator names follow nccl-tests, with one-line errors for the rest") {
  CHECK(parse_datatype("float32") == DataType::Float32);
  CHECK(parse_datatype("half") == DataType::Float16);
  CHECK(parse_datatype("bf16") == DataType::BFloat16);
  CHECK(to_string(DataType::Float16) == "half");
  CHECK(parse_datatypes("all").size() == 7);
  CHECK(parse_redops("sum,max") == std::vector<RedOp>{RedOp::Sum, RedOp::Max});
  try {
    parse_datatypes("float32,quad");
    FAIL("no error");
  } catch (const collkit::InputError& e) {
    CHECK(std::string(e.what()) ==
          "unknown datatype \"quad\" (expected float32, float16, bfloat16, float64, int32, int8, uint8 or all)");
  }
  CHECK_THROWS_AS(parse_redops("mean"), collkit::InputError);
}

TEST_CASE("host reductions: integers wrap, 16-bit floats round once per operation") {
  std::vector<std::int8_t> a{100, -100, 5}, b{100, -100, -7}, d(3);
  reduce(DataType::Int8, RedOp::Sum, d.data(), a.data(), b.data(), 3);
  CHECK(d == std::vector<std::int8_t>{-56, 56, -2});
  reduce(DataType::Int8, RedOp::Min, d.data(), a.data(), b.data(), 3);
  CHECK(d == std::vector<std::int8_t>{100, -100, -7});
  std::vector<std::uint8_t> u{200, 3}, v{100, 4}, w(2);
  reduce(DataType::UInt8, RedOp::Prod, w.data(), u.data(), v.data(), 2);
  CHECK(w == std::vector<std::uint8_t>{static_cast<std::uint8_t>(20000 % 256), 12});
  std::vector<std::uint16_t> h{half::from_float(1.5f), half::from_float(2048.0f)};
  std::vector<std::uint16_t> g{half::from_float(2.25f), half::from_float(1.0f)};
  std::vector<std::uint16_t> out(2);
  reduce(DataType::Float16, RedOp::Sum, out.data(), h.data(), g.data(), 2);
  CHECK(half::to_float(out[0]) == 3.75f);
  CHECK(half::to_float(out[1]) == 2048.0f);  // 2049 is not a half: rounds to even
  std::vector<double> x{6, 9};
  scale_mean(DataType::Float64, x.data(), 2, 3);
  CHECK(x == std::vector<double>{2, 3});
  std::vector<std::int32_t> k{7};
  scale_mean(DataType::Int32, k.data(), 1, 2);
  CHECK(k[0] == 3);  // integer division, as NCCL's ncclAvg on integers
}

TEST_CASE("Avg divides 8-bit integers by the rank count itself, not by the count cast to 8 bits") {
  std::vector<std::int8_t> s{-128, 127, 64};
  scale_mean(DataType::Int8, s.data(), 3, 128);  // 128 is -128 as an int8
  CHECK(s == std::vector<std::int8_t>{-1, 0, 0});
  s = {-128, 127, 64};
  scale_mean(DataType::Int8, s.data(), 3, 256);  // 256 is 0 as an int8: no division by zero
  CHECK(s == std::vector<std::int8_t>{0, 0, 0});
  std::vector<std::uint8_t> u{255, 10};
  scale_mean(DataType::UInt8, u.data(), 2, 256);
  CHECK(u == std::vector<std::uint8_t>{0, 0});
  u = {255, 10};
  scale_mean(DataType::UInt8, u.data(), 2, 5);
  CHECK(u == std::vector<std::uint8_t>{51, 2});
}
