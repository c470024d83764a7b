#pragma once
// A select by bits for the CPU backend's vectorised loops over lanes of environments.
#include <bit>
#include <cstdint>
#include <type_traits>

namespace surge {

// take ? when_taken : otherwise, exactly (NaN payloads and signed zeros included), computed as a mask of
// `take` ANDed and ORed. Written so, an in-place update `a[l] = select_bits(take, b, a[l])` stays a plain
// store: GCC compiles the ternary there as "store b where take", which with AVX2 (no mask registers) is
// vmaskmovps/vmaskmovpd, and AMD's cores run those far slower than plain stores.
template <class T>
inline T select_bits(bool take, T when_taken, T otherwise) {
  static_assert(sizeof(T) == 4 || sizeof(T) == 8, "select_bits takes 32- or 64-bit values");
  static_assert(std::is_floating_point_v<T> || std::has_unique_object_representations_v<T>,
                "select_bits needs a type whose every bit is part of its value (no padding)");
  using Bits = std::conditional_t<sizeof(T) == 8, std::uint64_t, std::uint32_t>;
  const Bits mask = Bits{0} - static_cast<Bits>(take);
  return std::bit_cast<T>((std::bit_cast<Bits>(when_taken) & mask) | (std::bit_cast<Bits>(otherwise) & ~mask));
}

}  // namespace surge
