// The size of one element of each public datatype, in the lowest layer so that every
// folder sizes elements alike (runtime::elementSize adds the error for an unknown
// type; the device transport cuts its chunks by it).
#pragma once

#include <cstddef>

#include "blink/blink.h"

namespace blink {

// 1, 2, 4 or 8; 0 for a value that is no blinkDataType_t.
constexpr std::size_t datatypeSize(blinkDataType_t type) {
  switch (type) {
    case blinkInt8:
    case blinkUint8:
      return 1;
    case blinkInt16:
    case blinkUint16:
    case blinkFloat16:
    case blinkBfloat16:
      return 2;
    case blinkInt32:
    case blinkUint32:
    case blinkFloat32:
      return 4;
    case blinkInt64:
    case blinkUint64:
    case blinkFloat64:
      return 8;
    default:
      return 0;
  }
}

}  // namespace blink
