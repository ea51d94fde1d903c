// zlib, for the CRC-32 of PNG chunks (crc32_z: a size_t length, zlib 1.2.9 on).
#include <stddef.h>
#include <zlib.h>

/// CRC-32/ISO-HDLC (PNG's, zlib's) of `count` bytes at `bytes`, continuing from `crc` (0 to start).
static inline unsigned long parley_crc32(unsigned long crc, const unsigned char *bytes, size_t count) {
    return crc32_z(crc, bytes, count);
}
