// The GPU reduction kernels against the host's (datatype.h's reduce and scale_mean), bit for bit,
// on data that is not exact: random floats with fractions, random 16-bit patterns, integers over
// their whole range, signed zeros. The backends' claim that host and device reductions give the
// same bits rests on this. Exit 77 (ctest: skipped) without a GPU.

#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "backends/cuda_common/cuda_check.h"
#include "backends/cuda_common/kernels.h"
#include "collkit/exec/datatype.h"

namespace exec = collkit::exec;

namespace {

// Random bytes for `t`: no NaN (its payload is not part of the claim); a few signed zeros.
std::vector<std::byte> make_operand(exec::DataType t, std::size_t n, std::mt19937_64& gen) {
  std::vector<std::byte> out(n * exec::size_of(t));
  std::uniform_real_distribution<double> real(-1000, 1000);
  for (std::size_t i = 0; i < n; ++i) {
    if (exec::is_float(t)) {
      double v = i % 97 == 0 ? ((gen() & 1) ? 0.0 : -0.0) : real(gen);
      if (t == exec::DataType::Float16 || t == exec::DataType::BFloat16) {
        // Any finite 16-bit pattern, subnormals included.
        std::uint16_t bits;
        do {
          bits = static_cast<std::uint16_t>(gen());
        } while (t == exec::DataType::Float16 ? (bits & 0x7c00u) == 0x7c00u : (bits & 0x7f80u) == 0x7f80u);
        std::memcpy(out.data() + i * 2, &bits, 2);
        continue;
      }
      exec::store(t, out.data(), i, v);
    } else {
      std::uint64_t bits = gen();
      std::memcpy(out.data() + i * exec::size_of(t), &bits, exec::size_of(t));
    }
  }
  return out;
}

}  // namespace

int main() {
  namespace cuda = collkit::exec::cuda;
  std::string why;
  if (cuda::device_count(&why) == 0) {
    std::printf("skip: no GPU (%s)\n", why.c_str());
    return 77;
  }
  try {
    std::mt19937_64 gen(42);
    constexpr std::size_t n = 100003;  // not a multiple of the block size
    int failures = 0;
    cuda::use_device(0);
    for (exec::DataType t : exec::kDataTypes) {
      std::size_t bytes = n * exec::size_of(t);
      std::vector<std::byte> a = make_operand(t, n, gen), b = make_operand(t, n, gen), host(bytes), device(bytes);
      cuda::DeviceBuffer da(0, bytes), db(0, bytes), dd(0, bytes);
      cuda::check(cudaMemcpy(da.data(), a.data(), bytes, cudaMemcpyHostToDevice), "cudaMemcpy");
      cuda::check(cudaMemcpy(db.data(), b.data(), bytes, cudaMemcpyHostToDevice), "cudaMemcpy");
      for (exec::RedOp op : exec::kRedOps) {
        exec::reduce(t, op, host.data(), a.data(), b.data(), n);
        cuda::check(cuda::launch_reduce(t, op, dd.data(), da.data(), db.data(), n, nullptr), "launch_reduce");
        cuda::check(cudaMemcpy(device.data(), dd.data(), bytes, cudaMemcpyDeviceToHost), "cudaMemcpy");
        std::size_t diff = 0;
        for (std::size_t i = 0; i < bytes; i += exec::size_of(t)) diff += std::memcmp(host.data() + i, device.data() + i, exec::size_of(t)) != 0;
        std::printf("%s %-8s %-5s %zu of %zu elements differ\n", diff ? "FAIL:" : "ok:  ", std::string(exec::to_string(t)).c_str(),
                    std::string(exec::to_string(op)).c_str(), diff, n);
        failures += diff != 0;
      }
      for (int ranks : {3, 8}) {  // the mean's division
        exec::scale_mean(t, a.data(), n, ranks);
        cuda::check(cuda::launch_scale_mean(t, da.data(), n, ranks, nullptr), "launch_scale_mean");
        cuda::check(cudaMemcpy(device.data(), da.data(), bytes, cudaMemcpyDeviceToHost), "cudaMemcpy");
        bool same = std::memcmp(a.data(), device.data(), bytes) == 0;
        std::printf("%s %-8s mean/%d\n", same ? "ok:  " : "FAIL:", std::string(exec::to_string(t)).c_str(), ranks);
        failures += !same;
      }
    }
    std::printf("%d failed\n", failures);
    return failures == 0 ? 0 : 1;
  } catch (const std::exception& e) {
    std::printf("error: %s\n", e.what());
    return 1;
  }
}
