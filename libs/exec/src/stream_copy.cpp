#include "stream_copy.h"

#include <cstdint>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace collkit::exec::detail {

void copy_streaming(std::byte* dst, const std::byte* src, std::size_t n) {
#if defined(__SSE2__)
  // Streaming stores need 16-byte aligned destinations: the head goes through memcpy.
  auto head = static_cast<std::size_t>((16 - reinterpret_cast<std::uintptr_t>(dst) % 16) % 16);
  if (head > n) head = n;
  std::memcpy(dst, src, head);
  std::size_t i = head;
  for (; i + 64 <= n; i += 64) {
    __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i));
    __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i + 16));
    __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i + 32));
    __m128i d = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i + 48));
    _mm_stream_si128(reinterpret_cast<__m128i*>(dst + i), a);
    _mm_stream_si128(reinterpret_cast<__m128i*>(dst + i + 16), b);
    _mm_stream_si128(reinterpret_cast<__m128i*>(dst + i + 32), c);
    _mm_stream_si128(reinterpret_cast<__m128i*>(dst + i + 48), d);
  }
  std::memcpy(dst + i, src + i, n - i);
  // Non-temporal stores are weakly ordered: fence before anyone else may read the bytes.
  _mm_sfence();
#else
  std::memcpy(dst, src, n);
#endif
}

}  // namespace collkit::exec::detail
