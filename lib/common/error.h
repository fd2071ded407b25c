// The one error model of msd (docs/errors.md): recoverable failures throw an
// msd::Error subclass with a message a user can act on; broken invariants fail
// MSD_CHECK, which prints both sides; a bad sample is a value, never thrown.
#pragma once

#include <cstdint>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

#include "msd/error.h"  // the exception types

namespace msd {

[[noreturn]] void check_failed(const char* expr, const char* file, int line, const std::string& detail);

// Builds a string from stream-able parts: str("offset ", 10, " in ", path).
template <typename... Parts>
std::string str(const Parts&... parts) {
  std::ostringstream out;
  (out << ... << parts);
  return out.str();
}

// A narrowing conversion that must not lose information (size_t meets int).
template <typename To, typename From>
To checked_cast(From value) {
  static_assert(std::is_integral_v<To> && std::is_integral_v<From>);
  if (!std::in_range<To>(value)) {
    throw Error(str("value ", +value, " does not fit the target integer type (range ",
                    +std::numeric_limits<To>::min(), "..", +std::numeric_limits<To>::max(), ")"));
  }
  return static_cast<To>(value);
}

// a * b for a size read from a file: throws Error naming `what` instead of
// wrapping around.
inline uint64_t checked_mul(uint64_t a, uint64_t b, const char* what) {
  uint64_t product = 0;
  if (__builtin_mul_overflow(a, b, &product))
    throw Error(str(what, ": ", a, " x ", b, " does not fit 64 bits (a damaged or hostile file)"));
  return product;
}

}  // namespace msd

// Invariant checks stay on in every build: they guard the determinism contract.
#define MSD_CHECK(cond)                                                   \
  do {                                                                    \
    if (!(cond)) ::msd::check_failed(#cond, __FILE__, __LINE__, "");      \
  } while (0)
#define MSD_CHECK_OP(a, op, b)                                                                  \
  do {                                                                                          \
    const auto& msd_a_ = (a);                                                                   \
    const auto& msd_b_ = (b);                                                                   \
    if (!(msd_a_ op msd_b_))                                                                    \
      ::msd::check_failed(#a " " #op " " #b, __FILE__, __LINE__,                                \
                          ::msd::str("(", +msd_a_, " vs ", +msd_b_, ")"));                       \
  } while (0)
#define MSD_CHECK_EQ(a, b) MSD_CHECK_OP(a, ==, b)
#define MSD_CHECK_LE(a, b) MSD_CHECK_OP(a, <=, b)
#define MSD_CHECK_LT(a, b) MSD_CHECK_OP(a, <, b)
