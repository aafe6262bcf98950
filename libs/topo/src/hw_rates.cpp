#include "hw_rates.h"

namespace collkit::topo::hw {

std::optional<double> nvlink_gbps_per_link(int sm) {
  if (sm >= 100) return 50.0;
  if (sm >= 90) return 25.0;
  if (sm == 86 || sm == 87 || sm == 89) return 14.0625;
  if (sm >= 80) return 25.0;
  if (sm >= 70) return 25.0;
  if (sm >= 60) return 20.0;
  return std::nullopt;
}

double pcie_gbps(double gts_per_lane, int width) {
  double efficiency;
  if (gts_per_lane <= 5.0) efficiency = 8.0 / 10.0;
  else if (gts_per_lane <= 32.0) efficiency = 128.0 / 130.0;
  else efficiency = 242.0 / 256.0;
  return gts_per_lane * efficiency / 8.0 * width;
}

const SmpRate& smp_rate(std::string_view vendor) {
  static constexpr SmpRate kIntel{3, 62.4, "Intel: 3 UPI links x 20.8 GB/s"};
  static constexpr SmpRate kAmd{4, 128.0, "AMD: 4 xGMI links x 32 GB/s"};
  static constexpr SmpRate kOther{1, 50.0, "CPU vendor not Intel or AMD: a conservative figure"};
  if (vendor == "GenuineIntel") return kIntel;
  if (vendor == "AuthenticAMD") return kAmd;
  return kOther;
}

}  // namespace collkit::topo::hw
