"""Machinery every capability shares and none owns: errors, argument checks, the folder walk, atomic writes,
progress, conversion sources and reports, CRC32C. Nothing here knows PCR, L3 or the cache."""
