#include <cmath>

#include "engine/decoding/search.h"

namespace xlate {

float length_penalty(int length, float alpha) {
  if (alpha == 0.f) return 1.f;
  return std::pow((5.f + static_cast<float>(length)) / 6.f, alpha);
}

}  // namespace xlate
