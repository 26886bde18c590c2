// CRC32C (Castagnoli, polynomial 0x82F63B78, reflected), the checksum of PCR headers and scan groups.
// Pure C++: no TensorFlow dependency, so the pure record reader and its tests can use it.
#ifndef TFLIQUID_OPS_COMMON_CRC32C_H_
#define TFLIQUID_OPS_COMMON_CRC32C_H_

#include <cstddef>
#include <cstdint>

namespace tfliquid {

// CRC32C of data[0, n), continuing from `crc` (0 for a fresh checksum). Uses the SSE4.2 crc32 instruction
// when the CPU has it, a slicing-by-8 table otherwise.
uint32_t Crc32c(const void* data, size_t n, uint32_t crc = 0);

}  // namespace tfliquid

#endif  // TFLIQUID_OPS_COMMON_CRC32C_H_
